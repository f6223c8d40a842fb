"""MkDocs hooks (``hooks:`` in mkdocs.yml): the docstrings are written for ``help()``, not for Markdown.

A docstring such as ``instruction [+ unmatched suffix] [+ model suffix]`` reads, to Markdown, as a reference link
whose target is ``+ model suffix``; mkdocs-autorefs then warns that it cannot find it, and ``--strict`` fails the
build. This hook lowers exactly that warning to INFO when the text comes from a docstring (the source is a file
under ``lib/``) and the "target" cannot be a Python name (it is not dotted identifiers). Every other warning,
including a cross-reference to a name that does not exist (``[radaudit.stats.nope][]``), still fails the build.

The docstrings also name objects with Sphinx roles (``:func:`judge```, ``:data:`~radaudit.x.Y```); Markdown
renders the backticks as code and leaves the role in front. :func:`on_page_content` drops the role and the ``~``,
so the page reads ``judge`` where ``help()`` reads ``:func:`judge```.
"""

from __future__ import annotations

import logging
import re

_UNFOUND = re.compile(r"from \S*/lib/\S*:\d+: .*Could not find cross-reference target '(?P<ref>.*)'$")
_NAME = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*$")
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|data|mod|attr|exc|obj|const|ref|doc|term):(<code>)~?")


class _ProseBrackets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            m = _UNFOUND.search(record.getMessage())
            if m and not _NAME.match(m.group("ref")):
                record.levelno, record.levelname = logging.INFO, "INFO"
        return True


for _name in ("mkdocs.plugins.mkdocs_autorefs._internal.plugin", "mkdocs.plugins.mkdocs_autorefs.plugin",
              "mkdocs.plugins.mkdocs_autorefs"):
    logging.getLogger(_name).addFilter(_ProseBrackets())


def on_page_content(html: str, **kwargs) -> str:
    """The page's HTML with the Sphinx roles of the docstrings removed (``:func:<code>x</code>`` -> ``<code>x</code>``)."""
    return _ROLE.sub(r"\1", html)
