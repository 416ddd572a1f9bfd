"""Small inline sources, one per language, shaped like the ``ast`` chunker's example
(docs/stages.md#ast):
a module header, a class too big for a small budget whose methods each fit,
and a trailing function."""

PYTHON = '''\
"""Module doc."""
import os

CONSTANT = 1


class CodebaseIndex(Base):
    """Index of a codebase."""

    directory: str

    def __init__(self, directory: str):
        self.directory = directory
        self.files = []
        self.ready = False

    async def exists(self) -> bool:
        """Returns whether the index exists (has been built)"""
        return os.path.exists(self.directory) and self.ready and len(self.files) > 0

    @property
    def size(self) -> int:
        total = 0
        for name in self.files:
            total += os.path.getsize(os.path.join(self.directory, name))
        return total


def helper(x):
    return x + 1
'''

JAVASCRIPT = """\
import { readFile } from "fs/promises";

const RETRIES = 3;

export class Loader extends Base {
  cache = new Map();

  constructor(root) {
    super();
    this.root = root;
  }

  async load(name) {
    if (this.cache.has(name)) {
      return this.cache.get(name);
    }
    const text = await readFile(`${this.root}/${name}`, "utf8");
    this.cache.set(name, text);
    return text;
  }

  clear = () => {
    this.cache.clear();
    console.log("cleared", this.root);
  };
}

export const parse = (text) => {
  return text.split("\\n").map((line) => line.trim());
};
"""

TYPESCRIPT = """\
import { Item } from "./item";

export interface Repository<T> {
  get(id: string): Promise<T | undefined>;
  put(item: T): Promise<void>;
}

export class MemoryRepository implements Repository<Item> {
  private items = new Map<string, Item>();

  async get(id: string): Promise<Item | undefined> {
    const found = this.items.get(id);
    if (!found) {
      console.warn(`missing item ${id}`);
    }
    return found;
  }

  async put(item: Item): Promise<void> {
    this.items.set(item.id, item);
    console.info(`stored item ${item.id} with ${item.tags.length} tags`);
  }
}

export function makeRepository(): Repository<Item> {
  return new MemoryRepository();
}
"""

TSX = """\
import React, { useState } from "react";

type Props = { label: string; initial?: number };

export function Counter({ label, initial = 0 }: Props) {
  const [count, setCount] = useState(initial);
  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    const response = await fetch(`/api/counters/${label}`, {
      method: "POST",
      body: JSON.stringify({ count, label, submittedAt: Date.now() }),
    });
    if (!response.ok) {
      throw new Error(`could not save counter ${label}: ${response.status}`);
    }
    setCount(0);
  };
  return <form onSubmit={submit}>{count}</form>;
}
"""

GO = """\
package store

import (
\t"errors"
\t"sync"
)

// ErrMissing is returned for unknown keys.
var ErrMissing = errors.New("missing")

// Store is a concurrent map.
type Store struct {
\tmu    sync.Mutex
\titems map[string]string
}

// Get returns the value stored under key.
func (s *Store) Get(key string) (string, error) {
\ts.mu.Lock()
\tdefer s.mu.Unlock()
\tv, ok := s.items[key]
\tif !ok {
\t\treturn "", ErrMissing
\t}
\treturn v, nil
}

func New() *Store {
\treturn &Store{items: map[string]string{}}
}
"""

RUST = """\
//! Crate docs.
use std::collections::HashMap;

/// A key-value store.
#[derive(Debug, Default)]
pub struct Store<T> {
    items: HashMap<String, T>,
}

impl<T: Clone> Store<T> {
    /// Make an empty store.
    pub fn new() -> Self {
        Store { items: HashMap::new() }
    }

    pub fn insert(&mut self, key: &str, value: T) -> Option<T> {
        let previous = self.items.insert(key.to_string(), value);
        if previous.is_some() {
            println!("replaced value for {}", key);
        }
        previous
    }
}

pub fn helper(x: i32) -> i32 {
    x * 2
}
"""

JAVA = """\
package com.example;

import java.util.List;

/** Application entry. */
public class App extends Base {
    private final List<String> names;

    public App(List<String> names) {
        this.names = names;
    }

    @Override
    public String greet(String who) {
        StringBuilder sb = new StringBuilder();
        sb.append("Hello, ").append(who).append("!");
        for (String n : names) {
            sb.append(" and ").append(n);
        }
        return sb.toString();
    }
}
"""

# Budgets (all-MiniLM-L6-v2 WordPiece tokens) at which each sample's file is
# too big, its class (or outer function) collapses and every member fits.
BUDGETS = {
    "pkg/index.py": 100,
    "src/loader.js": 100,
    "src/repo.ts": 100,
    "src/Counter.tsx": 150,
    "store/store.go": 100,
    "src/lib.rs": 110,
    "src/main/java/com/example/App.java": 100,
}

ALL = {
    "pkg/index.py": PYTHON,
    "src/loader.js": JAVASCRIPT,
    "src/repo.ts": TYPESCRIPT,
    "src/Counter.tsx": TSX,
    "store/store.go": GO,
    "src/lib.rs": RUST,
    "src/main/java/com/example/App.java": JAVA,
}
