# ruff: noqa: E501  (HTML template lines read better unwrapped)
"""The console's Jinja2 templates, kept in code so the package needs no data files.

Server-rendered HTML with autoescaping; the only script is the throughput page's ~10
lines that re-fetch the chart fragment (without JavaScript the page refreshes itself with
a ``<meta refresh>``).  No external assets: the console works offline.
"""

from __future__ import annotations

import jinja2

_CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#1d2733;background:#f6f8fa}
nav{background:#14324a;padding:.6em 1em}nav a{color:#e8f1f8;margin-right:1.2em;text-decoration:none}
nav a.on{font-weight:bold;border-bottom:2px solid #7fc1ea}main{padding:1em 1.5em}
table{border-collapse:collapse;background:#fff;margin:.5em 0 1.2em}
th,td{border:1px solid #d5dde5;padding:.25em .6em;text-align:left}th{background:#eaf0f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{background:#fde2e1;border:1px solid #e3a19c;padding:.6em 1em;margin-bottom:1em}
.note{color:#5b6b7a}pre{background:#fff;border:1px solid #d5dde5;padding:.4em;margin:0}
form.inline input{width:8em}h1{font-size:1.3em}h2{font-size:1.1em}
"""

BASE = (
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }} · Riverbed console</title>
{% block head %}{% endblock %}<style>"""
    + _CSS
    + """</style></head>
<body><nav>
{% for href, name in nav %}<a href="{{ href }}" class="{{ 'on' if href == section else '' }}">{{ name }}</a>{% endfor %}
<span class="note" style="color:#9fb8cc">{{ bootstrap }}</span></nav>
<main>{% if error %}<div class="banner" id="error">{{ error }}</div>{% endif %}
<h1>{{ title }}</h1>{% block body %}{% endblock %}</main></body></html>
"""
)

TOPICS = """{% extends "base" %}{% block body %}
<table id="topics"><tr><th>Topic</th><th>Partitions</th><th>Records</th></tr>
{% for t in topics %}<tr><td><a href="/topics/{{ t.name|urlencode }}">{{ t.name }}</a></td>
<td class="num">{{ t.partitions|length }}</td><td class="num">{{ t.records }}</td></tr>{% endfor %}
</table>{% endblock %}"""

TOPIC = """{% extends "base" %}{% block body %}
<p><a id="browse" href="/topics/{{ topic.name|urlencode }}/messages">Browse messages</a></p>
<h2>Partitions</h2>
<table id="partitions"><tr><th>Partition</th><th>Leader</th><th>Replicas</th>
<th>Log start offset</th><th>High watermark</th><th>Records</th></tr>
{% for p in topic.partitions %}<tr><td class="num">{{ p.partition }}</td><td class="num">{{ p.leader }}</td>
<td>{{ p.replicas|join(",") }}</td><td class="num">{{ p.log_start_offset }}</td>
<td class="num">{{ p.high_watermark }}</td><td class="num">{{ p.records }}</td></tr>{% endfor %}
</table><h2>Configs</h2>
<table id="configs"><tr><th>Name</th><th>Value</th><th>Default</th></tr>
{% for name, value, default in topic.configs %}<tr><td>{{ name }}</td><td>{{ value }}</td>
<td>{{ "yes" if default else "" }}</td></tr>{% endfor %}</table>{% endblock %}"""

MESSAGES = """{% extends "base" %}{% block body %}
<form class="inline" method="get" id="browse-form">
Partition <select name="partition">{% for p in partitions %}
<option value="{{ p }}" {{ "selected" if p == form.partition else "" }}>{{ p }}</option>{% endfor %}</select>
Offset <input name="offset" value="{{ form.offset }}">
or timestamp (ms or ISO-8601) <input name="timestamp" value="{{ form.timestamp }}">
Key <input name="key" value="{{ form.key }}">
Limit <input name="limit" value="{{ form.limit }}" style="width:4em">
<button type="submit" id="go">Show</button></form>
{% if result %}<p class="note" id="scanned">{{ result.records|length }} record(s), {{ result.scanned }} read
{% if result.note %}— {{ result.note }}{% endif %}</p>
<table id="messages"><tr><th>Partition</th><th>Offset</th><th>Timestamp</th><th>Key</th><th>Value</th></tr>
{% for r in result.records %}<tr><td class="num">{{ r.partition }}</td><td class="num">{{ r.offset }}</td>
<td>{{ r.timestamp_ms|ts }}</td><td>{{ r.key if r.key is not none else "null" }}</td>
<td>{% if r.value_json %}<pre class="json">{{ r.value_json }}</pre>{% else %}{{ r.value if r.value is not none else "null" }}{% endif %}
{% for k, v in r.headers %}<div class="note">{{ k }}={{ v }}</div>{% endfor %}</td></tr>{% endfor %}
</table>{% if following %}<p><a id="next" href="{{ following }}">Next</a></p>{% endif %}{% endif %}{% endblock %}"""

GROUPS = """{% extends "base" %}{% block body %}
{% if not groups %}<p class="note">No {{ kind }} groups.</p>{% endif %}
{% for g in groups %}<h2 id="group-{{ g.group }}">{% if link %}<a href="{{ link }}{{ g.group|urlencode }}">{{ g.group }}</a>{% else %}{{ g.group }}{% endif %}
<span class="note">{{ g.state }} · total lag <span class="total-lag">{{ "unknown" if g.total_lag is none else g.total_lag }}</span></span></h2>
{% if g.members %}<p class="note">Members: {{ g.members|join(", ") }}</p>{% endif %}
{% if g.note %}<p class="note group-note">{{ g.note }}</p>{% endif %}
<table class="lag"><tr><th>Topic</th><th>Partition</th><th>{{ offset_label }}</th>
<th>Log end offset</th><th>Lag</th></tr>
{% for topic, partition, committed, end, lag in g.partitions %}<tr><td>{{ topic }}</td>
<td class="num">{{ partition }}</td><td class="num">{{ "-" if committed is none else committed }}</td>
<td class="num">{{ "-" if end is none else end }}</td><td class="num lag">{{ "-" if lag is none else lag }}</td></tr>
{% endfor %}</table>{% endfor %}{% endblock %}"""

TRANSACTIONS = """{% extends "base" %}{% block body %}
<table id="transactions"><tr><th>Transactional id</th><th>State</th><th>Producer id</th><th>Coordinator</th></tr>
{% for t in transactions %}<tr><td><a href="/transactions/{{ t.transactional_id|urlencode }}">{{ t.transactional_id }}</a></td>
<td>{{ t.state }}</td><td class="num">{{ t.producer_id }}</td><td class="num">{{ t.coordinator }}</td></tr>{% endfor %}
</table>{% endblock %}"""

TRANSACTION = """{% extends "base" %}{% block body %}
<table id="transaction">
<tr><th>Transactional id</th><td>{{ t.transactional_id }}</td></tr>
<tr><th>State</th><td>{{ t.state }}</td></tr><tr><th>Coordinator</th><td>{{ t.coordinator }}</td></tr>
<tr><th>Producer id / epoch</th><td>{{ t.producer_id }} / {{ t.producer_epoch }}</td></tr>
<tr><th>Timeout</th><td>{{ t.timeout_ms }} ms</td></tr>
<tr><th>Started</th><td>{{ t.start_time_ms|ts if t.start_time_ms is not none else "-" }}</td></tr>
<tr><th>Partitions</th><td>{{ t.partitions|join(", ") or "-" }}</td></tr></table>{% endblock %}"""

CHARTS = """<table id="throughput"><tr><th>Topic</th><th>High watermarks</th><th>Records/s (last)</th><th>Chart</th></tr>
{% for row in rows %}<tr><td>{{ row.topic }}</td><td class="num">{{ row.offsets }}</td>
<td class="num rate">{{ "%.1f"|format(row.rate) }}</td><td>{{ row.svg|safe }}</td></tr>{% endfor %}</table>
<p class="note">{{ samples }} sample(s) every {{ interval }} s, taken by the server.</p>"""

THROUGHPUT = """{% extends "base" %}{% block head %}<noscript><meta http-equiv="refresh" content="5"></noscript>{% endblock %}
{% block body %}<div id="charts">{% include "charts" %}</div>
<script>
setInterval(function () {
  fetch("/throughput?fragment=1").then(function (r) { return r.ok ? r.text() : null; })
    .then(function (html) { if (html) document.getElementById("charts").innerHTML = html; })
    .catch(function () {});
}, {{ (interval * 1000)|int }});
</script>{% endblock %}"""

CONNECTORS = """{% extends "base" %}{% block body %}
<p class="note">Positions of CDC connectors, read from the compacted <code>*.cdc-offsets</code> topics.</p>
{% if not positions %}<p class="note">No CDC position topics found.</p>{% endif %}
<table id="connectors"><tr><th>Offsets topic</th><th>Connector</th><th>Source partition</th><th>Position</th><th>Stored</th></tr>
{% for p in positions %}<tr><td>{{ p.topic }}</td><td>{{ p.connector }}</td><td>{{ p.source_partition }}</td>
<td><code>{{ p.position }}</code></td><td>{{ p.timestamp_ms|ts }}</td></tr>{% endfor %}</table>
<h2>Spark pipelines</h2>
{% if not scrapes %}<p class="note">No pipeline endpoints: start the console with <code>--pipeline-metrics URL</code>.</p>{% endif %}
{% for s in scrapes %}<h3>{{ s.url }}</h3>{% if s.error %}<div class="banner">{{ s.error }}</div>{% endif %}
<table class="pipeline"><tr><th>Query</th>{% for name in shown %}<th>{{ name }}</th>{% endfor %}</tr>
{% for q in s.queries %}<tr><td>{{ query_names.get(q.query, q.query) }}</td>{% for name in shown %}
<td class="num">{{ "%g"|format(q.values[name]) if name in q.values else "-" }}</td>{% endfor %}</tr>{% endfor %}
</table>{% endfor %}{% endblock %}"""

MESSAGE = """{% extends "base" %}{% block body %}{% endblock %}"""


def _ts(ms: int | None) -> str:
    from datetime import UTC, datetime

    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def environment() -> jinja2.Environment:
    """A fresh autoescaping environment with every template and the ``ts`` filter."""
    env = jinja2.Environment(
        loader=jinja2.DictLoader(
            {
                "base": BASE,
                "topics": TOPICS,
                "topic": TOPIC,
                "messages": MESSAGES,
                "groups": GROUPS,
                "transactions": TRANSACTIONS,
                "transaction": TRANSACTION,
                "charts": CHARTS,
                "throughput": THROUGHPUT,
                "connectors": CONNECTORS,
                "message": MESSAGE,
            }
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["ts"] = _ts
    return env
