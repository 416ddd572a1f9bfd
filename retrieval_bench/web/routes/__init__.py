"""The web UI's routes, one :class:`fastapi.APIRouter` per area, composed by
:func:`retrieval_bench.web.app.create_app`: benchmark runs (:mod:`.runs`), run
comparison (:mod:`.compare`), sweeps (:mod:`.sweeps`), the prompt lab's pages
(:mod:`.lab`) and the JSON API (:mod:`.api`). Error handling is app-wide
(:func:`retrieval_bench.web.errors.install`).
"""
