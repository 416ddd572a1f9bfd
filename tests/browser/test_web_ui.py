"""The web UI in a real headless Chromium: every page loads without JavaScript
errors (screenshots saved as artifacts), the prompt lab's own JS saves edits and
runs jobs, a click opens a drill-down, a stale save in a second tab shows the 409
message, the run page's query table sorts by a header click and follows the
stage chosen, its funnel draws one step per pipeline step with its numbers, and
a damaged results database gives a readable error page, and a save without the
server's token is refused with a message saying which address to open."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser.conftest import Site, artifacts_dir
from tests.unit.web.conftest import USE_CASE

pytestmark = pytest.mark.browser

LAB = f"/prompts/{USE_CASE}"


def shot(driver: Any, name: str) -> None:
    path = artifacts_dir() / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"screenshot {path} not written"


def js_errors(driver: Any) -> list[str]:
    """SEVERE console entries since the last call (a missing favicon is not an error)."""
    logs = driver.get_log("browser")
    return [e["message"] for e in logs if e["level"] == "SEVERE" and "favicon" not in e["message"]]


def wait(driver: Any, seconds: float = 30) -> Any:
    return WebDriverWait(driver, seconds)


def wait_reload(driver: Any, old: Any, seconds: float = 60) -> None:
    """Waits until the page the element ``old`` came from has been replaced and loaded."""
    wait(driver, seconds).until(ec.staleness_of(old))
    wait(driver, seconds).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def results(driver: Any) -> list[list[str]]:
    """The sorted results table's rows as cell texts (best first)."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#results table tbody tr")
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in rows]


def prompt_row(driver: Any, name: str) -> Any:
    for tr in driver.find_elements(By.CSS_SELECTOR, "#prompts tbody tr"):
        if tr.find_element(By.CSS_SELECTOR, "[data-col=name]").get_attribute("value") == name:
            return tr
    raise AssertionError(f"no prompt row {name!r}")


def click_and_wait_reload(driver: Any, button: Any) -> None:
    body = driver.find_element(By.TAG_NAME, "body")
    button.click()
    wait_reload(driver, body)


def test_benchmark_pages_load_and_drill_down_by_click(driver: Any, site: Site) -> None:
    js_errors(driver)
    driver.get(site.url("/"))
    links = {a.text for a in driver.find_elements(By.CSS_SELECTOR, "a")}
    assert {site.run_both, site.run_bm25} <= links
    shot(driver, "runs-list")

    driver.find_element(By.LINK_TEXT, site.run_both).click()
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "svg[aria-label=funnel]")))
    funnel = driver.find_element(By.CSS_SELECTOR, "svg[aria-label=funnel]")
    assert funnel.size["width"] > 0 and funnel.find_elements(By.TAG_NAME, "polygon")
    assert "rrf" in driver.find_element(By.TAG_NAME, "table").text
    shot(driver, "run-page")

    query_link = driver.find_element(By.CSS_SELECTOR, f"a[href^='/runs/{site.run_both}/queries/']")
    query_id = query_link.text
    query_link.click()
    wait(driver).until(ec.url_contains(f"/queries/{query_id}"))
    assert driver.find_element(By.CSS_SELECTOR, "p.question").text
    shot(driver, "drill-down")

    driver.get(site.url("/"))
    driver.find_element(By.NAME, "base").send_keys(site.run_bm25)
    driver.find_element(By.NAME, "cand").send_keys(site.run_both)
    driver.find_element(By.CSS_SELECTOR, "form.compare").submit()
    wait(driver).until(ec.url_contains("/compare"))
    assert driver.find_elements(By.CSS_SELECTOR, "table")
    shot(driver, "compare")

    driver.get(site.url("/prompts"))
    shot(driver, "prompt-lab-index")
    driver.find_element(By.LINK_TEXT, USE_CASE).click()
    wait(driver).until(ec.presence_of_element_located((By.ID, "run-all")))
    shot(driver, "prompt-lab")
    assert js_errors(driver) == []


def test_lab_edits_and_runs_change_the_sorted_results(driver: Any, site: Site) -> None:
    js_errors(driver)
    driver.get(site.login_url(LAB))
    assert driver.current_url == site.url(LAB)  # the token left the address bar
    click_and_wait_reload(driver, driver.find_element(By.ID, "run-all"))
    before = results(driver)
    assert len(before) >= 2, before
    names = [r[1] for r in before]
    target = next(
        n for n in names[1:]
        if "ORACLE" not in prompt_row(driver, n).find_element(By.CSS_SELECTOR, "[data-col=user]")
        .get_attribute("value")
    )  # fmt: skip

    user = prompt_row(driver, target).find_element(By.CSS_SELECTOR, "[data-col=user]")
    user.send_keys("\nORACLE")
    click_and_wait_reload(
        driver, prompt_row(driver, target).find_element(By.CLASS_NAME, "save-prompt")
    )
    assert "ORACLE" in prompt_row(driver, target).find_element(
        By.CSS_SELECTOR, "[data-col=user]").get_attribute("value")  # fmt: skip
    click_and_wait_reload(driver, driver.find_element(By.ID, "run-all"))
    after = results(driver)
    assert after[0][1] == target != names[0], (before, after)
    shot(driver, "prompt-lab-after-edit")

    row = driver.find_element(By.CSS_SELECTOR, "#rows tbody tr")
    cell = row.find_element(By.CSS_SELECTOR, "[data-field=category]")
    wrong = "concept" if cell.get_attribute("value") != "concept" else "howto"
    cell.clear()
    cell.send_keys(wrong)
    click_and_wait_reload(driver, row.find_element(By.CLASS_NAME, "save-row"))
    first = driver.find_element(By.CSS_SELECTOR, "#rows tbody tr [data-field=category]")
    assert first.get_attribute("value") == wrong
    run_one = prompt_row(driver, target).find_element(By.CLASS_NAME, "run-one")
    click_and_wait_reload(driver, run_one)
    latest = {r[1]: r for r in results(driver)}  # the one prompt plus the baseline
    assert target in latest and len(latest) <= len(after), latest
    assert float(latest[target][3]) < float(after[0][3]), (after, latest)
    shot(driver, "prompt-lab-after-ground-truth-edit")

    driver.find_element(By.CSS_SELECTOR, "#results table").find_element(
        By.LINK_TEXT, target).click()  # fmt: skip
    wait(driver).until(ec.url_contains("/runs/"))
    detail = driver.find_element(By.TAG_NAME, "table").text
    assert "py-nameerror" in detail and wrong in detail
    shot(driver, "prompt-run-detail")
    assert js_errors(driver) == []


def test_second_tab_saving_a_stale_prompt_sees_the_409_message(driver: Any, site: Site) -> None:
    driver.get(site.login_url(LAB))
    first_tab = driver.current_window_handle
    name = driver.find_element(By.CSS_SELECTOR, "#prompts tbody tr [data-col=name]").get_attribute(
        "value"
    )
    driver.switch_to.new_window("tab")
    second_tab = driver.current_window_handle
    driver.get(site.url(LAB))

    driver.switch_to.window(first_tab)
    prompt_row(driver, name).find_element(By.CSS_SELECTOR, "[data-col=system]").send_keys(" brief")
    click_and_wait_reload(
        driver, prompt_row(driver, name).find_element(By.CLASS_NAME, "save-prompt")
    )

    driver.switch_to.window(second_tab)
    prompt_row(driver, name).find_element(By.CSS_SELECTOR, "[data-col=system]").send_keys(" long")
    prompt_row(driver, name).find_element(By.CLASS_NAME, "save-prompt").click()
    msg = driver.find_element(By.ID, "msg")
    wait(driver).until(lambda d: msg.text)
    assert msg.text.startswith("Not saved (someone else edited it)"), msg.text
    assert name in msg.text and msg.get_attribute("class") == "error"
    shot(driver, "prompt-lab-stale-409")
    driver.close()
    driver.switch_to.window(first_tab)
    system = prompt_row(driver, name).find_element(By.CSS_SELECTOR, "[data-col=system]")
    assert system.get_attribute("value").endswith(" brief")


def test_saving_without_the_token_shows_how_to_get_it(driver: Any, site: Site) -> None:
    """A lab opened without the printed address (no token cookie) reads, but a save is
    refused with the message saying what to open; after opening it the save works."""
    driver.get(site.url("/"))
    driver.delete_all_cookies()
    driver.get(site.url(LAB))
    name = driver.find_element(By.CSS_SELECTOR, "#prompts tbody tr [data-col=name]").get_attribute(
        "value"
    )
    prompt_row(driver, name).find_element(By.CSS_SELECTOR, "[data-col=system]").send_keys(" x")
    prompt_row(driver, name).find_element(By.CLASS_NAME, "save-prompt").click()
    msg = driver.find_element(By.ID, "msg")
    wait(driver).until(lambda d: msg.text)
    assert "token" in msg.text and "rbench serve" in msg.text, msg.text
    assert msg.get_attribute("class") == "error"
    shot(driver, "prompt-lab-no-token")
    driver.get(site.login_url(LAB))
    prompt_row(driver, name).find_element(By.CSS_SELECTOR, "[data-col=system]").send_keys(" y")
    click_and_wait_reload(
        driver, prompt_row(driver, name).find_element(By.CLASS_NAME, "save-prompt")
    )
    system = prompt_row(driver, name).find_element(By.CSS_SELECTOR, "[data-col=system]")
    assert system.get_attribute("value").endswith(" y")


def column(driver: Any, name: str) -> list[str]:
    """The cell texts of one column of the run page's query table."""
    heads = [th.text.rstrip(" ▲▼") for th in driver.find_elements(By.CSS_SELECTOR,
                                                                  "#queries thead th")]  # fmt: skip
    i = heads.index(name)
    return [tr.find_elements(By.TAG_NAME, "td")[i].text
            for tr in driver.find_elements(By.CSS_SELECTOR, "#queries tbody tr")]  # fmt: skip


def numbers(cells: list[str]) -> list[float]:
    return [float("nan") if c == "–" else float(c) for c in cells]


def click_header(driver: Any, name: str) -> None:
    link = driver.find_element(By.XPATH, f"//table[@id='queries']//th/a[text()='{name}']")
    click_and_wait_reload(driver, link)


def test_run_page_query_table_sorts_by_clicking_a_header(driver: Any, site: Site) -> None:
    js_errors(driver)
    driver.get(site.url(f"/runs/{site.run_both}"))
    before = column(driver, "query")
    assert len(before) == 10 and column(driver, "MRR")
    click_header(driver, "MRR")
    assert "sort=MRR" in driver.current_url
    ascending = numbers(column(driver, "MRR"))
    assert ascending == sorted(ascending) and len(set(ascending)) > 1
    th = driver.find_element(By.XPATH, "//table[@id='queries']//th[a[text()='MRR']]")
    assert th.get_attribute("aria-sort") == "ascending"
    shot(driver, "run-page-sorted-by-mrr")
    click_header(driver, "MRR")
    descending = numbers(column(driver, "MRR"))
    assert descending == sorted(ascending, reverse=True)
    assert column(driver, "query") != before or descending != ascending
    # each row still opens its drill-down
    first = driver.find_element(By.CSS_SELECTOR, "#queries tbody tr a")
    query_id = first.text
    first.click()
    wait(driver).until(ec.url_contains(f"/queries/{query_id}"))
    assert js_errors(driver) == []


def test_run_page_funnel_renders_its_steps_with_numbers(driver: Any, site: Site) -> None:
    js_errors(driver)
    driver.get(site.url(f"/runs/{site.run_both}"))
    svg = driver.find_element(By.CSS_SELECTOR, "svg[aria-label=funnel]")
    steps = svg.find_elements(By.CSS_SELECTOR, "polygon.step")
    assert [p.get_attribute("data-step") for p in steps] == ["candidates", "fused", "context"]
    assert all(p.size["width"] > 0 for p in steps)
    labels = [t.text for t in svg.find_elements(By.CSS_SELECTOR, "text.val")]
    assert len(labels) == 3 and all(
        t.startswith("mean per query ") and " · pooled " in t for t in labels
    )
    rows = driver.find_elements(By.CSS_SELECTOR, "#funnel tbody tr")
    recalls = [float(r.find_elements(By.TAG_NAME, "td")[1].text) for r in rows]
    assert recalls == sorted(recalls, reverse=True)  # a funnel only narrows
    driver.execute_script("arguments[0].scrollIntoView()", svg)
    shot(driver, "run-page-funnel")
    # choosing another stage redraws the funnel for it (the select submits itself)
    body = driver.find_element(By.TAG_NAME, "body")
    Select(driver.find_element(By.NAME, "stage")).select_by_value("bm25")
    wait_reload(driver, body)
    assert "stage=bm25" in driver.current_url
    steps = driver.find_elements(By.CSS_SELECTOR, "svg[aria-label=funnel] polygon.step")
    assert [p.get_attribute("data-step") for p in steps] == ["candidates", "context"]
    assert "metrics of bm25" in driver.find_element(By.ID, "queries-title").text
    shot(driver, "run-page-funnel-bm25")
    assert js_errors(driver) == []


def test_a_damaged_results_database_shows_a_readable_error_page(
    driver: Any, broken_site: Site
) -> None:
    for path in ("/", f"/runs/{broken_site.run_both}"):
        driver.get(broken_site.url(path))
        assert driver.find_element(By.TAG_NAME, "h1").text == "Results database cannot be read"
        assert driver.find_element(By.CSS_SELECTOR, "code.error-file").text == str(
            broken_site.ws.db_path)  # fmt: skip
        todo = driver.find_element(By.CSS_SELECTOR, "ul.error-todo").text
        assert "rbench runs --rebuild-db" in todo
        assert "Internal Server Error" not in driver.page_source
    shot(driver, "error-page-damaged-db")


def test_sweep_page_plots_each_scored_cell_and_the_pareto_front(
    driver: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A real sweep (6 scored cells, 2 failed) served on its own: /sweeps links it, and
    its page draws one point per scored cell (a tooltip naming it) and the Pareto front
    as a line, the same cells marked in the table."""
    from retrieval_bench.store.db import ResultsDB
    from retrieval_bench.store.sweeps import get_sweep
    from retrieval_bench.web.app import create_app
    from retrieval_bench.web.sweeps import pareto_cells, selection_cells
    from retrieval_bench.workspace import Workspace
    from tests.browser.conftest import serve
    from tests.unit.web.test_sweeps_page import run_sweep

    tmp = tmp_path_factory.mktemp("browser-sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_CACHE", str(tmp / "cache"))
        home, sweep_id = run_sweep(tmp)
    ws = Workspace(home)
    with ResultsDB(ws.db_path) as db:
        cells = selection_cells(get_sweep(db, sweep_id))
    done = sorted(c.cell for c in cells if c.status == "done")
    front = pareto_cells(cells)
    with serve(create_app(ws)) as base:
        js_errors(driver)
        driver.get(base + "/sweeps")
        shot(driver, "sweeps-list")
        driver.find_element(By.LINK_TEXT, sweep_id).click()
        chart = "svg[aria-label='quality versus cost']"
        wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, chart)))
        svg = driver.find_element(By.CSS_SELECTOR, chart)
        assert svg.size["width"] > 0 and svg.size["height"] > 0
        points = svg.find_elements(By.CSS_SELECTOR, "circle.point")
        assert len(points) == len(done) == 6  # failed cells have no point
        assert sorted(int(p.get_attribute("data-cell")) for p in points) == done
        assert all(p.size["width"] > 0 for p in points)
        tips = driver.execute_script(
            "return Array.from(arguments[0].querySelectorAll('circle.point'))"
            ".map(c => [c.dataset.cell, c.querySelector('title').textContent]);", svg)  # fmt: skip
        assert all(tip.startswith(f"cell {cell}") for cell, tip in tips)
        line = svg.find_element(By.CSS_SELECTOR, "polyline.front")
        assert len(line.get_attribute("points").split()) == len(front) >= 1
        if len(front) > 1:
            assert driver.execute_script("return arguments[0].getTotalLength()", line) > 0
        on_front = [int(p.get_attribute("data-cell"))
                    for p in svg.find_elements(By.CSS_SELECTOR, "circle.point.front")]  # fmt: skip
        rows = driver.find_elements(By.CSS_SELECTOR, "#cells tbody tr.pareto")
        marked = [int(tr.get_attribute("data-cell")) for tr in rows]
        assert sorted(on_front) == sorted(marked) == sorted(front)
        assert "chosen on dev, scored on test" in driver.page_source.lower()
        driver.execute_script("arguments[0].scrollIntoView()", svg)
        shot(driver, "sweep-page-chart")
        # a cell's row opens its run page
        driver.find_element(By.CSS_SELECTOR, "#cells tbody tr a").click()
        wait(driver).until(ec.url_contains("/runs/"))
        assert driver.find_elements(By.CSS_SELECTOR, "svg[aria-label=funnel]")
        assert js_errors(driver) == []
