"""The worked example: bank accounts.

Commands (``data``) and the events they become::

    Deposit        {"amount": n}              -> Deposited       {"amount": n}
    Withdraw       {"amount": n}              -> Withdrawn       {"amount": n}
    Transfer       {"to": id, "amount": n}    -> TransferDebited {"to", "amount", "transfer"}
                                                 + command CreditTransfer to account ``to``
    CreditTransfer {"from", "amount", "transfer"} -> TransferCredited {same}

State: ``{"balance": int}``.  Rejected (one line): a non-positive or non-integer amount,
a withdrawal or transfer above the balance (``insufficient funds: balance 30, withdraw 70``),
a transfer to the same account.  A transfer is a saga on Kafka transactions: the debit event
and the credit command are committed together by the source account's writer; the credit
(never rejected) is decided later by the destination's writer.  Money is conserved once
every command is decided.

Run a writer (``python -m riverbed.eventsourcing.bank writer --bootstrap-server H:P
--app bank --writer-id w1 [--partitions 3] [--snapshot-every 1]``); SIGTERM stops it
(exit 0); a fenced writer exits 3 with one line on stderr.  The balances read model:
:func:`balances_projection`.
"""

from __future__ import annotations

import argparse
import signal
import sqlite3
import sys
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from riverbed.errors import CommandRejected, EventSourcingError, WriterFencedError
from riverbed.eventsourcing.model import Command, Decision, Event, NewEvent, State
from riverbed.signals import SignalStop


class BankAccount:
    """The :class:`~riverbed.eventsourcing.model.Aggregate` of one account."""

    def initial_state(self) -> State:
        return {"balance": 0}

    def decide(self, aggregate_id: str, state: State, command: Command) -> Decision:
        data = command.data
        balance = int(state["balance"])
        if command.type == "CreditTransfer":
            return Decision([NewEvent("TransferCredited", dict(data))])
        amount = data.get("amount")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            raise CommandRejected(f"amount must be a positive integer, not {amount!r}")
        if command.type == "Deposit":
            return Decision([NewEvent("Deposited", {"amount": amount})])
        if command.type not in ("Withdraw", "Transfer"):
            raise CommandRejected(f"unknown command {command.type!r}")
        if amount > balance:
            raise CommandRejected(
                f"insufficient funds: balance {balance}, {command.type.lower()} {amount}"
            )
        if command.type == "Withdraw":
            return Decision([NewEvent("Withdrawn", {"amount": amount})])
        to = str(data.get("to", ""))
        if not to or to == aggregate_id:
            raise CommandRejected(f"cannot transfer from {aggregate_id} to {to!r}")
        transfer = command.id
        credit = Command(
            uuid.uuid5(uuid.NAMESPACE_URL, f"credit/{transfer}").hex,
            to,
            "CreditTransfer",
            {"from": aggregate_id, "amount": amount, "transfer": transfer},
            reply=False,
        )
        return Decision(
            [NewEvent("TransferDebited", {"to": to, "amount": amount, "transfer": transfer})],
            [credit],
        )

    def evolve(self, state: State, event: Event) -> State:
        amount = int(event.data["amount"])
        sign = 1 if event.type in ("Deposited", "TransferCredited") else -1
        return {"balance": int(state["balance"]) + sign * amount}


BALANCES_SQL = (
    "CREATE TABLE IF NOT EXISTS balances (account TEXT PRIMARY KEY, "
    "balance INTEGER NOT NULL, version INTEGER NOT NULL);"
)


def apply_balance(conn: sqlite3.Connection, event: Event) -> None:
    """The balances read model: one row per account, balance and version."""
    row = conn.execute(
        "SELECT balance FROM balances WHERE account = ?", (event.aggregate,)
    ).fetchone()
    state = BankAccount().evolve({"balance": row[0] if row else 0}, event)
    conn.execute(
        "INSERT INTO balances VALUES (?, ?, ?) ON CONFLICT (account) DO UPDATE SET "
        "balance = excluded.balance, version = excluded.version",
        (event.aggregate, state["balance"], event.version),
    )


def balances_projection(path: Path | str, config: Mapping[str, Any], app: str) -> Any:
    """The balances read model in SQLite at ``path`` (a :class:`SqliteProjection`)."""
    from riverbed.eventsourcing.model import AppTopics
    from riverbed.eventsourcing.projection import SqliteProjection

    return SqliteProjection(path, config, AppTopics(app), apply_balance, setup_sql=BALANCES_SQL)


def main(argv: list[str] | None = None) -> int:
    """``python -m riverbed.eventsourcing.bank writer ...`` (see module doc)."""
    from riverbed.eventsourcing.client import create_topics
    from riverbed.eventsourcing.model import AppTopics
    from riverbed.eventsourcing.writer import CommandWriter

    parser = argparse.ArgumentParser(prog="python -m riverbed.eventsourcing.bank")
    parser.add_argument("role", choices=["writer"])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--app", default="bank")
    parser.add_argument("--writer-id", required=True)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--snapshot-every", type=int, default=1)
    args = parser.parse_args(argv)
    config = {"bootstrap.servers": args.bootstrap_server}
    topics = AppTopics(args.app)
    stop = threading.Event()
    SignalStop(stop, [signal.SIGTERM]).install()  # no lock in the handler (riverbed.signals)
    try:
        create_topics(config, topics, partitions=args.partitions)
        writer = CommandWriter(
            config,
            topics,
            BankAccount(),
            writer_id=args.writer_id,
            snapshot_every=args.snapshot_every,
        )
        writer.run(stop, on_ready=lambda: print("writer ready", file=sys.stderr, flush=True))
    except WriterFencedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except EventSourcingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
