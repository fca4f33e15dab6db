"""``riverbed completion bash|zsh|fish``: print the shell completion script.

Completion is click's own: the shell calls ``riverbed`` back with ``_RIVERBED_COMPLETE``
set, so commands, options and choices complete from the installed version.  This command
prints the same script as ``_RIVERBED_COMPLETE=bash_source riverbed`` (``zsh_source``,
``fish_source``); install it with, e.g.::

    riverbed completion bash > ~/.local/share/bash-completion/completions/riverbed
    eval "$(riverbed completion zsh)"          # in ~/.zshrc
    riverbed completion fish > ~/.config/fish/completions/riverbed.fish
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

PROG_NAME = "riverbed"
COMPLETE_VAR = "_RIVERBED_COMPLETE"


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion_command(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL."""
    completion_class = get_completion_class(shell)
    assert completion_class is not None  # click ships all three
    root = ctx.find_root().command
    click.echo(completion_class(root, {}, PROG_NAME, COMPLETE_VAR).source())
