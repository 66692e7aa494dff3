"""The pages' one Jinja2 environment: templates under ``templates/``, every value escaped unless
it is ``Markup`` (the SVG charts ``report.svg`` draws, which escape their own labels), and a
value a template names but is not given an error rather than a blank cell."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

__all__ = ["Markup", "render"]

ENVIRONMENT = Environment(
    loader=PackageLoader("evaluation_pipeline.report", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render(template: str, **values) -> str:
    """``templates/<template>`` with ``values``: plain text, numbers already formatted as the
    page shows them."""
    return ENVIRONMENT.get_template(template).render(**values)
