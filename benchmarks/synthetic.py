"""Deterministic synthetic agent memories and queries for the speed benchmarks.

The memories imitate what an agent writes down: decisions, facts, incidents and
preferences about systems, people and files, 18 to 36 words each. Slot words are
drawn with a Zipf-like skew so that, as in real notes, a few words are common and
most are rare; queries are drawn from the same pools so they hit real postings.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

SYSTEMS = """postgres sqlite redis kafka rabbitmq nginx envoy kubernetes terraform ansible grafana
prometheus loki tempo jaeger vault consul nomad airflow dagster spark flink duckdb clickhouse
elasticsearch opensearch meilisearch typesense qdrant weaviate chroma pinecone milvus faiss
celery sidekiq temporal github gitlab jenkins buildkite circleci sentry datadog pagerduty opsgenie
slack jira linear notion confluence figma stripe twilio sendgrid auth0 okta keycloak cloudflare
fastly akamai s3 gcs azure lambda fargate ecs eks gke aks bigquery snowflake redshift dbt looker
metabase superset pytorch tensorflow onnx triton vllm ollama langchain llamaindex fastapi django
flask rails spring express nextjs react svelte vue tailwind webpack vite esbuild pnpm poetry uv""".split()

COMPONENTS = """billing ledger invoices checkout cart search ranking recommender feed notifications
inbox audit-chain session-store rate-limiter gateway scheduler importer exporter ingest pipeline
warehouse reporting dashboard onboarding signup login password-reset permissions roles tenancy
webhooks queue worker cron backup restore migration schema cache cdn uploads thumbnails media
transcoder embeddings retriever indexer crawler parser tokenizer classifier summarizer planner
memory-store vector-index graph-store telemetry metrics tracing logging alerting incident-bot
feature-flags experiments pricing quotas usage-meter entitlements sso mfa api-keys secrets""".split()

PEOPLE = """alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert
sybil trent victor walter yolanda zoe amara bjorn chen dmitri esther farid gosia hana""".split()

REASONS = """latency throughput cost durability simplicity compliance licensing vendor-lock-in
observability portability security privacy reliability consistency availability maturity
community-support hiring familiarity memory-footprint cold-start write-amplification tail-latency
backpressure idempotency ordering exactly-once encryption multi-tenancy air-gapped offline""".split()

ADJECTIVES = """slow flaky noisy stale brittle fast cheap expensive noisy safe unsafe deprecated legacy
experimental stable critical minor urgent blocking intermittent reproducible silent partial
corrupted duplicated missing delayed throttled degraded overloaded idle warm cold""".split()

VERBS = """migrate replace deprecate pin upgrade downgrade shard partition cache batch retry debounce
throttle encrypt rotate audit index reindex vacuum compact backfill snapshot replicate failover
rollback canary benchmark profile instrument document review refactor split merge""".split()

TEMPLATES = [
    "Decided to {verb} the {component} onto {system} because {reason} mattered more than {reason2}; {person} signed off after the review on {ticket}.",
    "The {component} was {adj} again this week: {system} timeouts under load, traced to {reason} in {path}; follow-up tracked in {ticket}.",
    "{person} prefers {system} over {system2} for the {component} since it keeps {reason} predictable and the team already knows it.",
    "Incident {ticket}: {component} went {adj} after the {system} upgrade, rolled back by {person}; root cause was {reason} in the {component2}.",
    "Never {verb} the {component} during business hours; {person} learned that {system} locks the {component2} tables and hurts {reason}.",
    "Note to self: the {component} config lives in {path} and reads its {system} credentials from the {component2} secrets, see {url}.",
    "We measured {reason} for {system} against {system2} on the {component}: {system} won by a wide margin, details in {path}.",
    "{person} asked to {verb} {component} weekly and report {reason} figures in {ticket} before the {system} contract renews.",
    "Escalate to {person} when the {component} queue on {system} stays {adj} for more than ten minutes; the runbook is {url}.",
    "The {component2} depends on {component} through {system}; any change to its schema must keep {reason} and needs {ticket} approval.",
    "Preference: keep {component} logs in {system} with thirty day retention for {reason}; {person} owns the dashboard at {url}.",
    "Open question from {person}: can {system2} replace {system} for the {component} without losing {reason}? Spike planned in {ticket}.",
]


def _zipf_pick(rng: random.Random, pool: list[str], s: float = 1.1) -> str:
    # Inverse-CDF sampling over a fixed rank list keeps the skew deterministic per seed.
    weights = _weights(len(pool), s)
    return rng.choices(pool, cum_weights=weights, k=1)[0]


_WEIGHT_CACHE: dict[tuple[int, float], list[float]] = {}


def _weights(n: int, s: float) -> list[float]:
    key = (n, s)
    if key not in _WEIGHT_CACHE:
        total, cum = 0.0, []
        for rank in range(1, n + 1):
            total += 1.0 / rank**s
            cum.append(total)
        _WEIGHT_CACHE[key] = cum
    return _WEIGHT_CACHE[key]


def _fill(rng: random.Random, template: str) -> str:
    slots = {
        "verb": _zipf_pick(rng, VERBS),
        "component": _zipf_pick(rng, COMPONENTS),
        "component2": _zipf_pick(rng, COMPONENTS),
        "system": _zipf_pick(rng, SYSTEMS),
        "system2": _zipf_pick(rng, SYSTEMS),
        "reason": _zipf_pick(rng, REASONS),
        "reason2": _zipf_pick(rng, REASONS),
        "person": _zipf_pick(rng, PEOPLE).capitalize(),
        "adj": _zipf_pick(rng, ADJECTIVES),
        "ticket": f"{rng.choice(['OPS', 'ENG', 'SEC', 'DATA', 'INFRA'])}-{rng.randint(1, 9999)}",
        "path": f"src/{_zipf_pick(rng, COMPONENTS)}/{_zipf_pick(rng, VERBS)}_{rng.randint(1, 400)}.py",
        "url": f"https://wiki.example.com/{_zipf_pick(rng, COMPONENTS)}/{rng.randint(1, 5000)}",
    }
    return template.format(**slots)


def memories(n: int, seed: int = 7) -> Iterator[dict[str, object]]:
    """Yield ``n`` remember-shaped records, the same ones for the same seed."""
    rng = random.Random(seed)
    kinds = ["decision", "fact", "incident", "preference", "note"]
    for i in range(n):
        text = _fill(rng, rng.choice(TEMPLATES))
        kind = kinds[i % len(kinds)]
        yield {
            "category": kind,
            "key": f"{kind}-{i:07d}",
            "content": text,
            "type": "decision" if kind == "decision" else "fact",
            "topic_path": f"{_zipf_pick(rng, COMPONENTS)}/{_zipf_pick(rng, REASONS)}",
            "agent_id": f"agent-{i % 4}",
        }


def queries(n: int, seed: int = 11) -> list[str]:
    """Short agent-style questions over the same vocabulary (with stopwords, as agents write them)."""
    rng = random.Random(seed)
    shapes = [
        "what did we decide about {component} on {system}",
        "why is the {component} {adj}",
        "who owns the {component} dashboard",
        "{system} {reason} {component}",
        "how do we {verb} {component} without hurting {reason}",
        "incident with {system} and the {component2}",
        "{person} preference for {component}",
        "runbook for {component} escalation",
    ]
    return [_fill(rng, rng.choice(shapes)) for _ in range(n)]
