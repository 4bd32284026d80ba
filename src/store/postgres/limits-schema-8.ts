// Migration 8 as it shipped: the fleet's limit counters in four tables (buckets, concurrency counts, and
// what each replica holds of each). Superseded by migration 11 (limits-schema.ts), which moves the rows
// into two tables and replaces these functions; kept so a fleet's schema is made the same way everywhere.
// Never edit (src/store/migrations.ts).
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
-- buckets: [[group, window, pool]]; caps: [[group, pool]]: what the request holds until it is settled.
-- What a replica (holder) holds for its requests in flight: reservations per bucket, slots per count.
CREATE TABLE limit_holds (
  holder TEXT NOT NULL,
  grp TEXT NOT NULL,
  win TEXT NOT NULL,
  pool TEXT NOT NULL,
  reserved_tokens BIGINT NOT NULL,
  reserved_spend_micros BIGINT NOT NULL,
  PRIMARY KEY (holder, grp, win, pool)
);
CREATE TABLE limit_holds_inflight (
  holder TEXT NOT NULL,
  grp TEXT NOT NULL,
  pool TEXT NOT NULL,
  inflight BIGINT NOT NULL,
  PRIMARY KEY (holder, grp, pool)
);

-- Frees what the holders hold, as a gone replica's: the reservations count as spent (never refunded),
-- the slots come back. Holdings rows are taken SKIP LOCKED, so two replicas freeing at once do not wait.
CREATE FUNCTION gateway_free_holders(p_holders TEXT[]) RETURNS INT LANGUAGE plpgsql AS $fn$
DECLARE
  freed_b JSONB; freed_k JSONB;
BEGIN
  WITH d AS (DELETE FROM limit_holds h USING (
      SELECT holder, grp, win, pool FROM limit_holds WHERE holder = ANY(p_holders) ORDER BY holder, grp COLLATE "C", win COLLATE "C", pool COLLATE "C" FOR UPDATE SKIP LOCKED) x
    WHERE h.holder = x.holder AND h.grp = x.grp AND h.win = x.win AND h.pool = x.pool RETURNING h.*)
  SELECT COALESCE(jsonb_agg(jsonb_build_array(grp, win, pool, reserved_tokens, reserved_spend_micros)), '[]') INTO freed_b FROM d;
  WITH d AS (DELETE FROM limit_holds_inflight h USING (
      SELECT holder, grp, pool FROM limit_holds_inflight WHERE holder = ANY(p_holders) ORDER BY holder, grp COLLATE "C", pool COLLATE "C" FOR UPDATE SKIP LOCKED) x
    WHERE h.holder = x.holder AND h.grp = x.grp AND h.pool = x.pool RETURNING h.*)
  SELECT COALESCE(jsonb_agg(jsonb_build_array(grp, pool, inflight)), '[]') INTO freed_k FROM d;
  PERFORM 1 FROM limit_buckets lb JOIN (SELECT DISTINCT v->>0 AS g, v->>1 AS w, v->>2 AS p FROM jsonb_array_elements(freed_b) v) k
      ON lb.grp = k.g AND lb.win = k.w AND lb.pool = k.p
    ORDER BY lb.grp COLLATE "C", lb.win COLLATE "C", lb.pool COLLATE "C" FOR UPDATE OF lb;
  PERFORM 1 FROM limit_concurrency lc JOIN (SELECT DISTINCT v->>0 AS g, v->>1 AS p FROM jsonb_array_elements(freed_k) v) k
      ON lc.grp = k.g AND lc.pool = k.p
    ORDER BY lc.grp COLLATE "C", lc.pool COLLATE "C" FOR UPDATE OF lc;
  UPDATE limit_buckets lb SET
      reserved_tokens = GREATEST(0, lb.reserved_tokens - f.rt), reserved_spend_micros = GREATEST(0, lb.reserved_spend_micros - f.rs),
      tokens = lb.tokens + f.rt, spend_micros = lb.spend_micros + f.rs
    FROM (SELECT v->>0 AS g, v->>1 AS w, v->>2 AS p, SUM(GREATEST(0, (v->>3)::BIGINT)) AS rt, SUM(GREATEST(0, (v->>4)::BIGINT)) AS rs FROM jsonb_array_elements(freed_b) v GROUP BY 1, 2, 3) f
    WHERE lb.grp = f.g AND lb.win = f.w AND lb.pool = f.p;
  UPDATE limit_concurrency lc SET inflight = GREATEST(0, lc.inflight - f.n)
    FROM (SELECT v->>0 AS g, v->>1 AS p, SUM(GREATEST(0, (v->>2)::BIGINT)) AS n FROM jsonb_array_elements(freed_k) v GROUP BY 1, 2) f
    WHERE lc.grp = f.g AND lc.pool = f.p;
  RETURN jsonb_array_length(freed_b) + jsonb_array_length(freed_k);
END
$fn$;

-- The holdings of replicas silent for gone_after seconds (or stopped), freed by whichever live replica
-- comes first. Answers how many rows were freed.
CREATE FUNCTION gateway_free_gone(gone_after BIGINT) RETURNS INT LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN gateway_free_holders(ARRAY(
    SELECT DISTINCT h.holder FROM (SELECT holder FROM limit_holds UNION SELECT holder FROM limit_holds_inflight) h
      JOIN replicas r ON r.id = h.holder WHERE r.last_seen < extract(epoch from now())::BIGINT - gone_after));
END
$fn$;

-- One batch, as arrays (read in place; jsonb would be copied at every step). The batch's buckets: keys
-- bg, bw, bp and bn [window start, requests, tokens, spend] each (the counts start a bucket the store has
-- not seen); its concurrency counts: kg, kp. ended: what the requests that ended since the last batch give
-- back and used, [n, n x (bucket, reserved tokens, reserved spend), m, m x (count, slots), u, u x (bucket,
-- window start, requests, tokens, spend)] (requests: those admitted unchecked while the store was away). reqs: the new requests, per request [n, n x (bucket, requests cap, tokens
-- cap, budget micros cap) in the order a single process checks them, m, m x (count, cap), u, u x bucket
-- (each once), fee, reserved tokens, reserved spend], a cap of -1 none. reset: the holder was cut off long
-- enough to be taken for gone: what it held is freed first (its requests then in flight give nothing
-- back). Answers {a: [true | [why, check index]] per request, b: [[requests, tokens, spend]] per bucket}.
CREATE FUNCTION gateway_reserve(bg TEXT[], bw TEXT[], bp TEXT[], bn BIGINT[], kg TEXT[], kp TEXT[], ended BIGINT[], reqs BIGINT[], n_new INT, p_holder TEXT, p_reset BOOLEAN)
RETURNS JSONB LANGUAGE plpgsql AS $fn$
DECLARE
  nb INT := COALESCE(array_length(bg, 1), 0);
  nk INT := COALESCE(array_length(kg, 1), 0);
  b_start BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  b_req BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  b_tok BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  b_spd BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  b_rtok BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  b_rspd BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  k_in BIGINT[] := array_fill(0::BIGINT, ARRAY[nk]);
  -- What this holder's holdings change by (+ admitted, - given back).
  h_tok BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  h_spd BIGINT[] := array_fill(0::BIGINT, ARRAY[nb]);
  h_in BIGINT[] := array_fill(0::BIGINT, ARRAY[nk]);
  -- Local copies: a local array is expanded once and then indexed in place.
  e BIGINT[] := ended;
  a BIGINT[] := reqs;
  r RECORD;
  i INT; j INT; ix INT; cap BIGINT; st BIGINT;
  p INT := 1; nc INT; cs INT; nx INT; xs INT; nu INT; us INT;
  fee BIGINT; rt BIGINT; rs BIGINT;
  why TEXT; at INT;
  answers JSONB := '[]';
  counts JSONB := '[]';
  seen INT := 0;
BEGIN
  IF p_reset THEN PERFORM gateway_free_holders(ARRAY[p_holder]); END IF;
  -- The batch's rows, locked in the order of their keys and read; a bucket not seen before is made first.
  FOR pass IN 1 .. 2 LOOP
    FOR r IN SELECT x.o::INT AS o, lb.* FROM unnest(bg, bw, bp) WITH ORDINALITY AS x(g, w, p, o)
        JOIN limit_buckets lb ON lb.grp = x.g AND lb.win = x.w AND lb.pool = x.p
        ORDER BY lb.grp COLLATE "C", lb.win COLLATE "C", lb.pool COLLATE "C" FOR UPDATE OF lb LOOP
      seen := seen + 1;
      st := bn[4 * r.o - 3];
      IF st > r.start THEN
        b_start[r.o] := st; b_req[r.o] := 0; b_tok[r.o] := 0; b_spd[r.o] := 0;
      ELSE
        b_start[r.o] := r.start; b_req[r.o] := r.requests; b_tok[r.o] := r.tokens; b_spd[r.o] := r.spend_micros;
      END IF;
      b_rtok[r.o] := r.reserved_tokens; b_rspd[r.o] := r.reserved_spend_micros;
    END LOOP;
    EXIT WHEN seen = nb;
    seen := 0;
    INSERT INTO limit_buckets (grp, win, pool, start, requests, tokens, spend_micros)
      SELECT x.g, x.w, x.p, bn[4 * x.o - 3], bn[4 * x.o - 2], bn[4 * x.o - 1], bn[4 * x.o]
      FROM unnest(bg, bw, bp) WITH ORDINALITY AS x(g, w, p, o) ORDER BY x.g COLLATE "C", x.w COLLATE "C", x.p COLLATE "C"
      ON CONFLICT DO NOTHING;
  END LOOP;
  seen := 0;
  FOR pass IN 1 .. 2 LOOP
    FOR r IN SELECT x.o::INT AS o, lc.inflight FROM unnest(kg, kp) WITH ORDINALITY AS x(g, p, o)
        JOIN limit_concurrency lc ON lc.grp = x.g AND lc.pool = x.p
        ORDER BY lc.grp COLLATE "C", lc.pool COLLATE "C" FOR UPDATE OF lc LOOP
      seen := seen + 1;
      k_in[r.o] := r.inflight;
    END LOOP;
    EXIT WHEN seen = nk;
    seen := 0;
    INSERT INTO limit_concurrency (grp, pool, inflight)
      SELECT x.g, x.p, 0 FROM unnest(kg, kp) AS x(g, p) ORDER BY x.g COLLATE "C", x.p COLLATE "C"
      ON CONFLICT DO NOTHING;
  END LOOP;
  -- What ended: reservations and slots given back, then real usage in.
  nc := COALESCE(e[p], 0); p := p + 1;
  FOR j IN 0 .. nc - 1 LOOP
    ix := e[p] + 1; rt := e[p + 1]; rs := e[p + 2]; p := p + 3;
    b_rtok[ix] := GREATEST(0, b_rtok[ix] - rt); b_rspd[ix] := GREATEST(0, b_rspd[ix] - rs);
    h_tok[ix] := h_tok[ix] - rt; h_spd[ix] := h_spd[ix] - rs;
  END LOOP;
  nx := COALESCE(e[p], 0); p := p + 1;
  FOR j IN 0 .. nx - 1 LOOP
    ix := e[p] + 1;
    k_in[ix] := GREATEST(0, k_in[ix] - e[p + 1]);
    h_in[ix] := h_in[ix] - e[p + 1];
    p := p + 2;
  END LOOP;
  nu := COALESCE(e[p], 0); p := p + 1;
  FOR j IN 0 .. nu - 1 LOOP
    ix := e[p] + 1; st := e[p + 1];
    -- A window that rolled over since admission starts clean; the usage belongs to the new one.
    IF st > b_start[ix] THEN
      b_start[ix] := st; b_req[ix] := 0; b_tok[ix] := 0; b_spd[ix] := 0;
    END IF;
    b_req[ix] := b_req[ix] + e[p + 2]; b_tok[ix] := b_tok[ix] + e[p + 3]; b_spd[ix] := b_spd[ix] + e[p + 4];
    p := p + 5;
  END LOOP;
  p := 1;
  FOR i IN 1 .. n_new LOOP
    nc := a[p]; cs := p + 1; p := cs + 4 * nc;
    nx := a[p]; xs := p + 1; p := xs + 2 * nx;
    nu := a[p]; us := p + 1; p := us + nu;
    fee := a[p]; rt := a[p + 1]; rs := a[p + 2]; p := p + 3;
    why := NULL;
    -- Budget first: an exhausted budget outlasts any rate window, so it is the answer worth giving.
    FOR j IN 0 .. nc - 1 LOOP
      cap := a[cs + 4 * j + 3];
      CONTINUE WHEN cap < 0;
      ix := a[cs + 4 * j] + 1;
      IF b_spd[ix] >= cap THEN why := 'budget'; at := j; EXIT; END IF;
      IF b_spd[ix] + b_rspd[ix] >= cap THEN why := 'budget_held'; at := j; EXIT; END IF;
    END LOOP;
    IF why IS NULL THEN
      FOR j IN 0 .. nc - 1 LOOP
        ix := a[cs + 4 * j] + 1;
        cap := a[cs + 4 * j + 1];
        IF cap >= 0 AND b_req[ix] >= cap THEN why := 'requests'; at := j; EXIT; END IF;
        cap := a[cs + 4 * j + 2];
        IF cap >= 0 AND b_tok[ix] + b_rtok[ix] >= cap THEN
          why := CASE WHEN b_tok[ix] >= cap THEN 'tokens' ELSE 'tokens_held' END; at := j; EXIT;
        END IF;
      END LOOP;
    END IF;
    IF why IS NULL THEN
      FOR j IN 0 .. nx - 1 LOOP
        IF k_in[a[xs + 2 * j] + 1] >= a[xs + 2 * j + 1] THEN why := 'concurrent'; at := j; EXIT; END IF;
      END LOOP;
    END IF;
    IF why IS NOT NULL THEN
      answers := answers || jsonb_build_array(jsonb_build_array(why, at));
      CONTINUE;
    END IF;
    FOR j IN 0 .. nu - 1 LOOP
      ix := a[us + j] + 1;
      b_req[ix] := b_req[ix] + 1; b_spd[ix] := b_spd[ix] + fee;
      b_rtok[ix] := b_rtok[ix] + rt; b_rspd[ix] := b_rspd[ix] + rs;
      h_tok[ix] := h_tok[ix] + rt; h_spd[ix] := h_spd[ix] + rs;
    END LOOP;
    FOR j IN 0 .. nx - 1 LOOP
      ix := a[xs + 2 * j] + 1;
      k_in[ix] := k_in[ix] + 1;
      h_in[ix] := h_in[ix] + 1;
    END LOOP;
    answers := answers || jsonb_build_array(true);
  END LOOP;
  -- Every write of the batch in one statement: one executor run, not four.
  WITH ub AS (
    UPDATE limit_buckets lb SET start = b_start[x.o], requests = b_req[x.o], tokens = b_tok[x.o], spend_micros = b_spd[x.o],
        reserved_tokens = b_rtok[x.o], reserved_spend_micros = b_rspd[x.o]
      FROM unnest(bg, bw, bp) WITH ORDINALITY AS x(g, w, p, o)
      WHERE lb.grp = x.g AND lb.win = x.w AND lb.pool = x.p
  ), uk AS (
    UPDATE limit_concurrency lc SET inflight = k_in[x.o]
      FROM unnest(kg, kp) WITH ORDINALITY AS x(g, p, o)
      WHERE lc.grp = x.g AND lc.pool = x.p
  ), hk AS (
    -- Deltas: a holding given back after it was freed (reset, or taken for gone) stays at 0 when freed.
    INSERT INTO limit_holds_inflight AS h (holder, grp, pool, inflight)
      SELECT p_holder, x.g, x.p, h_in[x.o] FROM unnest(kg, kp) WITH ORDINALITY AS x(g, p, o) WHERE h_in[x.o] <> 0
      ON CONFLICT (holder, grp, pool) DO UPDATE SET inflight = h.inflight + excluded.inflight
  )
  INSERT INTO limit_holds AS h (holder, grp, win, pool, reserved_tokens, reserved_spend_micros)
    SELECT p_holder, x.g, x.w, x.p, h_tok[x.o], h_spd[x.o] FROM unnest(bg, bw, bp) WITH ORDINALITY AS x(g, w, p, o)
      WHERE h_tok[x.o] <> 0 OR h_spd[x.o] <> 0
    ON CONFLICT (holder, grp, win, pool) DO UPDATE SET
      reserved_tokens = h.reserved_tokens + excluded.reserved_tokens, reserved_spend_micros = h.reserved_spend_micros + excluded.reserved_spend_micros;
  FOR i IN 1 .. nb LOOP
    counts := counts || jsonb_build_array(jsonb_build_array(b_req[i], b_tok[i], b_spd[i]));
  END LOOP;
  RETURN jsonb_build_object('a', answers, 'b', counts);
END
$fn$;`,
};
