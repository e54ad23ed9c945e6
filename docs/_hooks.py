"""mkdocs hooks of the documentation site (``hooks:`` in mkdocs.yml; not a page).

* :func:`on_config` puts the optional pages of :data:`OPTIONAL_PAGES` into the navigation when their file exists
  (pages written by other work on the project), after "Speed and memory".
* :func:`on_page_markdown` fills ``<!-- cli-reference -->`` in ``cli.md`` with the ``--help`` of every
  ``readgaze`` command, generated from the commands' own argparse parsers, so the reference never drifts from the
  code.
* :func:`on_config` also lays out the installed package's source tree for the API reference: the repository's
  ``models/``, ``kernels/`` and ``data_prep/`` are ``readgaze.models`` etc. only once installed (setup.py), so
  mkdocstrings reads the source from ``build/api-source/readgaze/``, made of links to the repository's folders.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
from pathlib import Path

OPTIONAL_PAGES = (("Line assignment", "line-assignment.md"), ("Benchmark runs", "benchmark.md"),
                  ("Predicting", "predict.md"), ("Evidence", "evidence.md"))
"""(title, file) of pages the site shows when the file is in docs/; each goes after AFTER."""
AFTER = "performance.md"
LIGHTNING = ("fit", "validate", "test", "predict")
"""Commands whose options LightningCLI builds from the model and data classes (``readgaze fit --help`` lists them)."""


API_SOURCE = Path("build") / "api-source"
"""Where :func:`api_source_tree` lays out ``readgaze/`` as installed (mkdocs.yml's mkdocstrings ``paths``)."""
PARTS = {"models": "models", "kernels": "kernels", "data_prep": "data_prep"}


def api_source_tree(root: Path) -> Path:
    """``build/api-source/readgaze/``: a link to each entry of ``readgaze/`` plus ``models``, ``kernels`` and
    ``data_prep`` linked to the repository's folders of those names (the installed layout, setup.py)."""
    target = root / API_SOURCE / "readgaze"
    target.mkdir(parents=True, exist_ok=True)
    links = {entry.name: entry for entry in (root / "readgaze").iterdir() if entry.name != "__pycache__"}
    links.update({name: root / folder for name, folder in PARTS.items()})
    for name, source in links.items():
        link = target / name
        if link.is_symlink() or link.exists():
            if link.is_symlink() and link.resolve() == source.resolve():
                continue
            link.unlink()
        link.symlink_to(source.resolve(), target_is_directory=source.is_dir())
    return target


# Laid out when mkdocs loads this module, before mkdocstrings reads its ``paths`` (its on_config runs before ours).
api_source_tree(Path(__file__).resolve().parents[1])


def on_config(config, **_):
    docs = Path(config["docs_dir"])
    nav = config["nav"]
    at = next((i for i, item in enumerate(nav) if AFTER in item.values()), len(nav) - 1) + 1
    present = [{title: name} for title, name in OPTIONAL_PAGES if (docs / name).is_file()]
    config["nav"] = nav[:at] + present + nav[at:]
    return config


def on_page_markdown(markdown, page, **_):
    if page.file.src_uri == "cli.md" and "<!-- cli-reference -->" in markdown:
        return markdown.replace("<!-- cli-reference -->", cli_reference())
    return markdown


def _help(parser: argparse.ArgumentParser) -> str:
    return parser.format_help().rstrip()


def _main_help(module, name: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        module.main([name, "--help"])
    return out.getvalue().rstrip()


def cli_reference() -> str:
    """Markdown: one section per command of :data:`readgaze.cli.COMMANDS`, its help as the parser prints it."""
    from readgaze.cli import COMMANDS, _parser

    os.environ["COLUMNS"] = "110"  # argparse wraps to this width
    parts = ["## readgaze", "", "```text", _help(_parser()), "```", ""]
    for name, (module_name, summary) in COMMANDS.items():
        parts += [f"## readgaze {name}", "", f"{summary[0].upper()}{summary[1:]}.", ""]
        if name in LIGHTNING:
            parts += [f"`readgaze {name}` is LightningCLI: its options are those of the config's model and data "
                      f"classes (`readgaze {name} -c reading_goal/roberteye_f --help` lists them; the classes' "
                      "parameters are in the [API reference](api/models.md)). A config is given with `-c TASK/MODEL` "
                      "(a packaged config, `readgaze configs`) or a YAML path; any option is overridden with "
                      "`--section.key value`.", ""]
            continue
        module = importlib.import_module(module_name)
        if hasattr(module, "add_arguments"):
            parser = argparse.ArgumentParser(prog=f"readgaze {name}", description=summary)
            module.add_arguments(parser)
            parts += ["```text", _help(parser), "```", ""]
            for action in parser._actions:  # subcommands (prep's modes)
                if isinstance(action, argparse._SubParsersAction):
                    for sub_name, sub in action.choices.items():
                        parts += [f"### readgaze {name} {sub_name}", "", "```text", _help(sub), "```", ""]
        else:
            parts += ["```text", _main_help(module, name), "```", ""]
    return "\n".join(parts)
