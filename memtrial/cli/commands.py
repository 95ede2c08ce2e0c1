"""The ``memtrial`` command line (Typer), started by :func:`memtrial.cli.console.main`.

The core commands live here; sub-commands of the service and the backtest
are mounted lazily: their modules are imported only when that command runs,
so ``memtrial --help`` and the core commands start fast, and a sub-command
whose extra is not installed says which ``pip install`` adds it. Errors of
the core end the program with one line and exit code 2.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from memtrial.errors import install_hint

__all__ = ["LAZY_COMMANDS", "app"]

#: name -> (module, attribute, help, extra). The attribute is a Typer app or a command function;
#: the extra is what ``install_hint(extra)`` adds when the module's dependencies are missing.
LAZY_COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "backtest": (
        "backtest.cli",
        "app",
        "Offline backtests on PlantedMem and real-data benchmarks (the [backtest] extra).",
        "backtest",
    ),
    "data": (
        "backtest.cli",
        "data_app",
        "Benchmark data: what is present and where each input is looked for (the [backtest] extra).",
        "backtest",
    ),
    "serve": ("service.cli", "serve", "Run the REST service (migrates the database first).", "service"),
    "tenants": ("service.cli", "tenants", "Manage tenants and their API keys.", "service"),
    "mcp": (
        "service.mcp",
        "mcp",
        "Serve the agent loop as MCP tools over stdio or streamable HTTP (the [mcp] extra).",
        "mcp",
    ),
    "docs": (
        "service.site",
        "docs",
        "Serve the documentation site locally, offline (or build it: --build DIR; the [docs] extra).",
        "docs",
    ),
}


#: whether Typer renders help with Rich (reading it as markup): ``typer.core.HAS_RICH`` from Typer 0.19 on, whether
#: Rich imported before it
_RICH_HELP = bool(getattr(typer.core, "HAS_RICH", getattr(typer.core, "rich", None) is not None))


class _LazyCommand(TyperCommand):
    """Stands in for a sub-command until it runs: its module is imported then."""

    def __init__(self, name: str, module_name: str, attribute: str, help_text: str, extra: str) -> None:
        # Typer reads help as Rich markup where Rich is installed: '[backtest]' would be taken for a tag and dropped
        shown = help_text.replace("[", "\\[") if _RICH_HELP else help_text
        super().__init__(name=name, help=shown, context_settings={"ignore_unknown_options": True})
        self.module_name = module_name
        self.attribute = attribute
        self.extra = extra

    def load(self) -> Any:
        """The real click command of the sub-command (or one line naming the missing extra)."""
        try:
            module = importlib.import_module(self.module_name)
        except ModuleNotFoundError as error:
            typer.echo(
                f"error: 'memtrial {self.name}' needs the {self.extra} extra ({error.name} is not installed): {install_hint(self.extra)}",
                err=True,
            )
            raise typer.Exit(code=2) from None
        target: Any = getattr(module, self.attribute)
        if not isinstance(target, typer.Typer):
            wrapper = typer.Typer(add_completion=False)
            wrapper.command(self.name)(target)
            target = wrapper
        command = typer.main.get_command(target)
        command.name = self.name
        return command

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        return self.load().make_context(info_name, args, parent=parent, **extra)


def _available() -> list[str]:
    """Lazy commands whose module is installed (found without importing it)."""
    names = []
    for name, (module_name, _, _, _) in LAZY_COMMANDS.items():
        try:
            found = importlib.util.find_spec(module_name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            names.append(name)
    return names


class _LazyGroup(TyperGroup):
    """The top-level group: core commands plus a stand-in for each installed lazy sub-command."""

    def list_commands(self, ctx: Any) -> list[str]:
        for name in _available():
            if name not in self.commands:
                module_name, attribute, help_text, extra = LAZY_COMMANDS[name]
                self.add_command(_LazyCommand(name, module_name, attribute, help_text, extra), name)
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        self.list_commands(ctx)
        return self.commands.get(cmd_name)


app = typer.Typer(
    name="memtrial",
    help="Memory credit assignment with trust gating for LLM decision agents.",
    no_args_is_help=True,
    add_completion=False,
    cls=_LazyGroup,
)


@app.command()
def demo(
    decisions: int = typer.Option(120, min=13, help="Number of monthly decisions."),
    beta: float = typer.Option(0.5, min=0.0, max=1.0, help="How strongly experiences steer the drafts, in [0, 1]."),
    seed: int = typer.Option(0, min=0, help="Seed of the synthetic world (an integer >= 0)."),
    gate: str = typer.Option(
        "dial",
        help="How memory is trusted: dial (the default configuration: the trust dial, with quarantine), "
        "or the paper's binary gate under a test: anytime, prequential or none.",
    ),
) -> None:
    """Run the method on a small synthetic world and show what it learned."""
    if gate not in ("dial", "prequential", "anytime", "none"):
        raise typer.BadParameter(
            f"must be one of dial, prequential, anytime or none, got {gate!r}", param_hint="'--gate'"
        )
    from rich.console import Console
    from rich.table import Table

    from memtrial.cli.demo import run_demo
    from memtrial.errors import MemtrialError

    if beta != beta:  # NaN passes the range check's comparisons
        raise typer.BadParameter("must be a number in [0, 1], got nan", param_hint="'--beta'")
    try:
        result = run_demo(decisions, beta, seed, gate)
    except MemtrialError as error:
        raise _fail(error) from None
    console = Console()
    how = "the trust dial" if gate == "dial" else f"the {gate} gate"
    summary = Table(title=f"{result.n_decisions} decisions, beta = {beta}, {how}")
    summary.add_column("policy")
    summary.add_column("mean utility (pp)", justify="right")
    summary.add_row("memtrial", f"{result.memtrial_pp:.3f}")
    summary.add_row("equal weight", f"{result.equal_weight_pp:.3f}")
    summary.add_row("draft mean", f"{result.draft_mean_pp:.3f}")
    console.print(summary)
    if result.mean_trust_weight is not None and result.full_trust_rate is not None:
        console.print(
            f"trust dial: mean weight on memory {result.mean_trust_weight:.2f}, "
            f"full trust on {result.full_trust_rate:.0%} of decisions"
        )
        console.print(f"quarantined: {', '.join(result.quarantined) or 'none'}")
    else:
        console.print(f"gate open on {result.open_rate:.0%} of decisions")
    names = {1: "useful", 0: "neutral", -1: "misleading"}
    values = Table(title="learned values")
    values.add_column("experience")
    values.add_column("true type")
    values.add_column("value (pp)", justify="right")
    for experience_id, value in sorted(result.values.items(), key=lambda item: -item[1]):
        values.add_row(experience_id, names[result.types[experience_id]], f"{100 * value:.3f}")
    console.print(values)
    verification = result.engine.verify()
    console.print(
        f"prediction log: {verification.n_entries} entries, chain {'intact' if verification.ok else 'BROKEN'}"
    )


@app.command()
def version() -> None:
    """Print the version."""
    from memtrial import __version__

    typer.echo(__version__)


def _fail(error: Exception) -> typer.Exit:
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(code=2)


if __name__ == "__main__":
    app()
