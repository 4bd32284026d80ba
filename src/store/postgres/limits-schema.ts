// The fleet's limit counters (design/replicas.md, "Limits: exact for the fleet"): windowed buckets,
// concurrency counts and the leases of requests in flight, changed only by the three functions below, so
// an admission is one round trip and all-or-none. Every function locks rows in one order (a lease, then
// buckets by key, then concurrency counts by key; keys sorted by the caller), so two of them never
// deadlock. Amounts are BIGINT: token sums and micro cost units pass 2^32.
import type { Migration } from "../migrations.ts";

export const LIMIT_MIGRATION: Migration = {
  version: 8,
  name: "fleet limits",
  sql: `CREATE TABLE limit_buckets (
  grp TEXT NOT NULL,
  win TEXT NOT NULL,
  pool TEXT NOT NULL,
  start BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  tokens BIGINT NOT NULL,
  spend_micros BIGINT NOT NULL,
  reserved_tokens BIGINT NOT NULL DEFAULT 0,
  reserved_spend_micros BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (grp, win, pool)
);
CREATE TABLE limit_concurrency (
  grp TEXT NOT NULL,
  pool TEXT NOT NULL,
  inflight BIGINT NOT NULL,
  PRIMARY KEY (grp, pool)
);
CREATE TABLE limit_leases (
  id TEXT PRIMARY KEY,
  replica TEXT NOT NULL,
  buckets JSONB NOT NULL,
  caps JSONB NOT NULL,
  reserved_tokens BIGINT NOT NULL,
  reserved_spend_micros BIGINT NOT NULL,
  taken_at BIGINT NOT NULL
);
CREATE INDEX limit_leases_replica ON limit_leases (replica);

-- plan: {b: [[group, window, pool]] sorted, c: [[bucket index, requests, tokens, budget micros]] in the
-- order the single process checks them, k: [[group, pool, cap]] sorted}.
-- req: {st: [window start per bucket], in: [[requests, tokens, spend]] (a new row's counts), fee, rt, rs,
-- l: lease id or null, r: replica id, now: epoch seconds}.
-- Answers {ok: true, b: [[requests, tokens, spend]]} or {ok: false, why, i}.
CREATE FUNCTION gateway_reserve(plan JSONB, req JSONB) RETURNS JSONB LANGUAGE plpgsql AS $fn$
DECLARE
  n INT := jsonb_array_length(plan->'b');
  b JSONB; c JSONB; k JSONB;
  st BIGINT; i INT; ix INT; have BIGINT;
  r_start BIGINT[] := '{}'; r_req BIGINT[] := '{}'; r_tok BIGINT[] := '{}'; r_spd BIGINT[] := '{}';
  r_rtok BIGINT[] := '{}'; r_rspd BIGINT[] := '{}';
  cur limit_buckets%ROWTYPE;
  fee BIGINT := (req->>'fee')::BIGINT;
  rt BIGINT := (req->>'rt')::BIGINT;
  rs BIGINT := (req->>'rs')::BIGINT;
  counts JSONB := '[]';
BEGIN
  FOR i IN 0 .. n - 1 LOOP
    b := plan->'b'->i;
    st := (req->'st'->>i)::BIGINT;
    INSERT INTO limit_buckets (grp, win, pool, start, requests, tokens, spend_micros)
      VALUES (b->>0, b->>1, b->>2, st, (req->'in'->i->>0)::BIGINT, (req->'in'->i->>1)::BIGINT, (req->'in'->i->>2)::BIGINT)
      ON CONFLICT DO NOTHING;
    SELECT * INTO cur FROM limit_buckets WHERE grp = b->>0 AND win = b->>1 AND pool = b->>2 FOR UPDATE;
    IF st > cur.start THEN
      cur.start := st; cur.requests := 0; cur.tokens := 0; cur.spend_micros := 0;
    END IF;
    r_start := r_start || cur.start; r_req := r_req || cur.requests; r_tok := r_tok || cur.tokens;
    r_spd := r_spd || cur.spend_micros; r_rtok := r_rtok || cur.reserved_tokens; r_rspd := r_rspd || cur.reserved_spend_micros;
  END LOOP;
  -- Budget first: an exhausted budget outlasts any rate window, so it is the answer worth giving.
  FOR i IN 0 .. jsonb_array_length(plan->'c') - 1 LOOP
    c := plan->'c'->i;
    ix := (c->>0)::INT + 1;
    IF c->>3 IS NOT NULL THEN
      IF r_spd[ix] >= (c->>3)::BIGINT THEN RETURN jsonb_build_object('ok', false, 'why', 'budget', 'i', i); END IF;
      IF r_spd[ix] + r_rspd[ix] >= (c->>3)::BIGINT THEN RETURN jsonb_build_object('ok', false, 'why', 'budget_held', 'i', i); END IF;
    END IF;
  END LOOP;
  FOR i IN 0 .. jsonb_array_length(plan->'c') - 1 LOOP
    c := plan->'c'->i;
    ix := (c->>0)::INT + 1;
    IF c->>1 IS NOT NULL AND r_req[ix] >= (c->>1)::BIGINT THEN RETURN jsonb_build_object('ok', false, 'why', 'requests', 'i', i); END IF;
    IF c->>2 IS NOT NULL AND r_tok[ix] + r_rtok[ix] >= (c->>2)::BIGINT THEN
      IF r_tok[ix] >= (c->>2)::BIGINT THEN RETURN jsonb_build_object('ok', false, 'why', 'tokens', 'i', i); END IF;
      RETURN jsonb_build_object('ok', false, 'why', 'tokens_held', 'i', i);
    END IF;
  END LOOP;
  FOR i IN 0 .. jsonb_array_length(plan->'k') - 1 LOOP
    k := plan->'k'->i;
    INSERT INTO limit_concurrency (grp, pool, inflight) VALUES (k->>0, k->>1, 0) ON CONFLICT DO NOTHING;
    SELECT inflight INTO have FROM limit_concurrency WHERE grp = k->>0 AND pool = k->>1 FOR UPDATE;
    IF have >= (k->>2)::BIGINT THEN RETURN jsonb_build_object('ok', false, 'why', 'concurrent', 'i', i); END IF;
  END LOOP;
  FOR i IN 0 .. n - 1 LOOP
    b := plan->'b'->i;
    UPDATE limit_buckets SET start = r_start[i + 1], requests = r_req[i + 1] + 1, tokens = r_tok[i + 1],
        spend_micros = r_spd[i + 1] + fee, reserved_tokens = reserved_tokens + rt, reserved_spend_micros = reserved_spend_micros + rs
      WHERE grp = b->>0 AND win = b->>1 AND pool = b->>2;
    counts := counts || jsonb_build_array(jsonb_build_array(r_req[i + 1] + 1, r_tok[i + 1], r_spd[i + 1] + fee));
  END LOOP;
  FOR i IN 0 .. jsonb_array_length(plan->'k') - 1 LOOP
    k := plan->'k'->i;
    UPDATE limit_concurrency SET inflight = inflight + 1 WHERE grp = k->>0 AND pool = k->>1;
  END LOOP;
  IF req->>'l' IS NOT NULL THEN
    INSERT INTO limit_leases (id, replica, buckets, caps, reserved_tokens, reserved_spend_micros, taken_at)
      VALUES (req->>'l', req->>'r', plan->'b', plan->'k', rt, rs, (req->>'now')::BIGINT);
  END IF;
  RETURN jsonb_build_object('ok', true, 'b', counts);
END
$fn$;

-- Frees one lease: its reservation leaves the buckets, its concurrency counts drop. used: whether the
-- reservation counts as spent (a gone replica's: never refunded) or is released (settled with real usage).
CREATE FUNCTION gateway_free_lease(lease limit_leases, used BOOLEAN) RETURNS VOID LANGUAGE plpgsql AS $fn$
DECLARE
  b JSONB; k JSONB;
BEGIN
  FOR b IN SELECT value FROM jsonb_array_elements(lease.buckets) WITH ORDINALITY AS e(value, o) ORDER BY o LOOP
    UPDATE limit_buckets SET
        reserved_tokens = GREATEST(0, reserved_tokens - lease.reserved_tokens),
        reserved_spend_micros = GREATEST(0, reserved_spend_micros - lease.reserved_spend_micros),
        tokens = tokens + CASE WHEN used THEN lease.reserved_tokens ELSE 0 END,
        spend_micros = spend_micros + CASE WHEN used THEN lease.reserved_spend_micros ELSE 0 END
      WHERE grp = b->>0 AND win = b->>1 AND pool = b->>2;
  END LOOP;
  FOR k IN SELECT value FROM jsonb_array_elements(lease.caps) WITH ORDINALITY AS e(value, o) ORDER BY o LOOP
    UPDATE limit_concurrency SET inflight = GREATEST(0, inflight - 1) WHERE grp = k->>0 AND pool = k->>1;
  END LOOP;
END
$fn$;

-- A request ended: s = {b: [[group, window, pool, start]] sorted, t: tokens, s: spend micros, l: lease or null}.
-- A lease already freed (its replica was taken for gone) is not freed twice; its usage is still counted.
CREATE FUNCTION gateway_settle(s JSONB) RETURNS VOID LANGUAGE plpgsql AS $fn$
DECLARE
  lease limit_leases%ROWTYPE;
  b JSONB; st BIGINT;
BEGIN
  IF s->>'l' IS NOT NULL THEN
    DELETE FROM limit_leases WHERE id = s->>'l' RETURNING * INTO lease;
    IF FOUND THEN PERFORM gateway_free_lease(lease, false); END IF;
  END IF;
  IF (s->>'t')::BIGINT = 0 AND (s->>'s')::BIGINT = 0 THEN RETURN; END IF;
  FOR b IN SELECT value FROM jsonb_array_elements(s->'b') WITH ORDINALITY AS e(value, o) ORDER BY o LOOP
    st := (b->>3)::BIGINT;
    -- A window that rolled over since admission starts clean; the usage belongs to the new one.
    UPDATE limit_buckets SET
        requests = CASE WHEN start < st THEN 0 ELSE requests END,
        tokens = CASE WHEN start < st THEN 0 ELSE tokens END + (s->>'t')::BIGINT,
        spend_micros = CASE WHEN start < st THEN 0 ELSE spend_micros END + (s->>'s')::BIGINT,
        start = GREATEST(start, st)
      WHERE grp = b->>0 AND win = b->>1 AND pool = b->>2;
  END LOOP;
END
$fn$;

-- The leases of replicas silent for gone_after seconds (or stopped): their concurrency freed, their
-- reservations counted as spent. Any replica may run it; SKIP LOCKED keeps two from waiting on each other.
CREATE FUNCTION gateway_free_gone(gone_after BIGINT) RETURNS INT LANGUAGE plpgsql AS $fn$
DECLARE
  lease limit_leases%ROWTYPE;
  freed INT := 0;
BEGIN
  FOR lease IN SELECT * FROM limit_leases WHERE replica IN (
      SELECT id FROM replicas WHERE last_seen < extract(epoch from now())::BIGINT - gone_after)
    ORDER BY id FOR UPDATE SKIP LOCKED LOOP
    DELETE FROM limit_leases WHERE id = lease.id;
    PERFORM gateway_free_lease(lease, true);
    freed := freed + 1;
  END LOOP;
  RETURN freed;
END
$fn$;`,
};
