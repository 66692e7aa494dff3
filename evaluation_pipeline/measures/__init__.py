"""What a measure is, declared once, and its name in ir_measures' syntax: the declarations
(:mod:`.declarations`), the kernel codes they name (:mod:`.kinds`) and the parser of a name
(:mod:`.parse`). Plain Python, no numba: the spec checks its ``measures:`` with them, and the
measures' compiled pass (``metric.measures``) reads them."""
