// The fleet's limit counters (design/replicas.md, "Limits: exact for the fleet"), as migration 11 leaves
// them: one row per windowed bucket or concurrency count (`limit_counts`, a count's window is ''), one row
// per replica and row of what that replica holds for its requests in flight (`limit_holdings`), changed
// only by the functions below. A replica sends what one event-loop turn asked for as one batch (one round
// trip, one transaction): the requests that ended since the last batch are settled (real usage in, their
// slots and reservations out), then the new admissions are decided in turn against the running counts
// (all of a request's caps or none); the batch's rows are locked and read in one statement and written in
// one. Migration 8 (limits-schema-8.ts) kept buckets, counts and holdings in four tables: two statements
// more per batch, measured in docs/performance.md. Every function locks rows in one order (holdings, then
// counts, each by key in byte order), so two of them never deadlock. Amounts are BIGINT: token sums and
// micro cost units pass 2^32. The functions keep migration 8's signatures and answers, so a replica of the
// previous build keeps working against them during a rolling upgrade.
import type { Migration } from "../migrations.ts";

export const LIMIT_COUNTS_MIGRATION: Migration = {
  version: 11,
  name: "fleet limit counts",
  sql: `CREATE TABLE limit_counts (
  grp TEXT NOT NULL,
  win TEXT NOT NULL,
  pool TEXT NOT NULL,
  start BIGINT NOT NULL DEFAULT 0,
  requests BIGINT NOT NULL DEFAULT 0,
  tokens BIGINT NOT NULL DEFAULT 0,
  spend_micros BIGINT NOT NULL DEFAULT 0,
  reserved_tokens BIGINT NOT NULL DEFAULT 0,
  reserved_spend_micros BIGINT NOT NULL DEFAULT 0,
  inflight BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (grp, win, pool)
);
CREATE TABLE limit_holdings (
  holder TEXT NOT NULL,
  grp TEXT NOT NULL,
  win TEXT NOT NULL,
  pool TEXT NOT NULL,
  reserved_tokens BIGINT NOT NULL DEFAULT 0,
  reserved_spend_micros BIGINT NOT NULL DEFAULT 0,
  inflight BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (holder, grp, win, pool)
);
INSERT INTO limit_counts (grp, win, pool, start, requests, tokens, spend_micros, reserved_tokens, reserved_spend_micros)
  SELECT grp, win, pool, start, requests, tokens, spend_micros, reserved_tokens, reserved_spend_micros FROM limit_buckets;
INSERT INTO limit_counts (grp, win, pool, inflight) SELECT grp, '', pool, inflight FROM limit_concurrency;
INSERT INTO limit_holdings (holder, grp, win, pool, reserved_tokens, reserved_spend_micros)
  SELECT holder, grp, win, pool, reserved_tokens, reserved_spend_micros FROM limit_holds;
INSERT INTO limit_holdings (holder, grp, win, pool, inflight) SELECT holder, grp, '', pool, inflight FROM limit_holds_inflight;
DROP TABLE limit_buckets, limit_concurrency, limit_holds, limit_holds_inflight;

-- Frees what the holders hold, as a gone replica's: the reservations count as spent (never refunded),
-- the slots come back. Holdings rows are taken SKIP LOCKED, so two replicas freeing at once do not wait.
CREATE OR REPLACE FUNCTION gateway_free_holders(p_holders TEXT[]) RETURNS INT LANGUAGE plpgsql AS $fn$
DECLARE
  freed JSONB;
BEGIN
  WITH d AS (DELETE FROM limit_holdings h USING (
      SELECT holder, grp, win, pool FROM limit_holdings WHERE holder = ANY(p_holders)
        ORDER BY holder, grp COLLATE "C", win COLLATE "C", pool COLLATE "C" FOR UPDATE SKIP LOCKED) x
    WHERE h.holder = x.holder AND h.grp = x.grp AND h.win = x.win AND h.pool = x.pool RETURNING h.*)
  SELECT COALESCE(jsonb_agg(jsonb_build_array(grp, win, pool, reserved_tokens, reserved_spend_micros, inflight)), '[]') INTO freed FROM d;
  PERFORM 1 FROM limit_counts c JOIN (SELECT DISTINCT v->>0 AS g, v->>1 AS w, v->>2 AS p FROM jsonb_array_elements(freed) v) k
      ON c.grp = k.g AND c.win = k.w AND c.pool = k.p
    ORDER BY c.grp COLLATE "C", c.win COLLATE "C", c.pool COLLATE "C" FOR UPDATE OF c;
  UPDATE limit_counts c SET
      reserved_tokens = GREATEST(0, c.reserved_tokens - f.rt), reserved_spend_micros = GREATEST(0, c.reserved_spend_micros - f.rs),
      tokens = c.tokens + f.rt, spend_micros = c.spend_micros + f.rs, inflight = GREATEST(0, c.inflight - f.n)
    FROM (SELECT v->>0 AS g, v->>1 AS w, v->>2 AS p, SUM(GREATEST(0, (v->>3)::BIGINT)) AS rt, SUM(GREATEST(0, (v->>4)::BIGINT)) AS rs,
        SUM(GREATEST(0, (v->>5)::BIGINT)) AS n FROM jsonb_array_elements(freed) v GROUP BY 1, 2, 3) f
    WHERE c.grp = f.g AND c.win = f.w AND c.pool = f.p;
  RETURN jsonb_array_length(freed);
END
$fn$;

-- The holdings of replicas silent for gone_after seconds (or stopped), freed by whichever live replica
-- comes first. Answers how many rows were freed.
CREATE OR REPLACE FUNCTION gateway_free_gone(gone_after BIGINT) RETURNS INT LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN gateway_free_holders(ARRAY(
    SELECT DISTINCT h.holder FROM limit_holdings h
      JOIN replicas r ON r.id = h.holder WHERE r.last_seen < extract(epoch from now())::BIGINT - gone_after));
END
$fn$;

-- One batch, as arrays (read in place; jsonb would be copied at every step). The batch's buckets: keys
-- bg, bw, bp and bn [window start, requests, tokens, spend] each (the counts start a bucket the store has
-- not seen); its concurrency counts: kg, kp (window ''). ended: what the requests that ended since the last batch give
-- back and used, [n, n x (bucket, reserved tokens, reserved spend), m, m x (count, slots), u, u x (bucket,
-- window start, requests, tokens, spend)] (requests: those admitted unchecked while the store was away). reqs: the new requests, per request [n, n x (bucket, requests cap, tokens
-- cap, budget micros cap) in the order a single process checks them, m, m x (count, cap), u, u x bucket
-- (each once), fee, reserved tokens, reserved spend], a cap of -1 none. reset: the holder was cut off long
-- enough to be taken for gone: what it held is freed first (its requests then in flight give nothing
-- back). Answers {a: [true | [why, check index]] per request, b: [[requests, tokens, spend]] per bucket}.
CREATE OR REPLACE FUNCTION gateway_reserve(bg TEXT[], bw TEXT[], bp TEXT[], bn BIGINT[], kg TEXT[], kp TEXT[], ended BIGINT[], reqs BIGINT[], n_new INT, p_holder TEXT, p_reset BOOLEAN)
RETURNS JSONB LANGUAGE plpgsql AS $fn$
DECLARE
  nb INT := COALESCE(array_length(bg, 1), 0);
  nk INT := COALESCE(array_length(kg, 1), 0);
  n INT := nb + nk;
  -- The batch's rows: its buckets (1 .. nb), then its concurrency counts (nb + 1 .. n, window '').
  cg TEXT[] := bg || kg;
  cw TEXT[] := bw || array_fill(''::TEXT, ARRAY[nk]);
  cp TEXT[] := bp || kp;
  -- A local array is expanded once and then indexed in place.
  c_start BIGINT[] := array_fill(0::BIGINT, ARRAY[n]);
  c_req BIGINT[] := c_start;
  c_tok BIGINT[] := c_start;
  c_spd BIGINT[] := c_start;
  c_rtok BIGINT[] := c_start;
  c_rspd BIGINT[] := c_start;
  c_in BIGINT[] := c_start;
  -- What this holder's holdings change by (+ admitted, - given back).
  h_tok BIGINT[] := c_start;
  h_spd BIGINT[] := c_start;
  h_in BIGINT[] := c_start;
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
  -- The batch's rows, locked in the order of their keys and read in one statement; a row not seen before is made first.
  FOR pass IN 1 .. 2 LOOP
    FOR r IN SELECT x.o::INT AS o, c.* FROM unnest(cg, cw, cp) WITH ORDINALITY AS x(g, w, p, o)
        JOIN limit_counts c ON c.grp = x.g AND c.win = x.w AND c.pool = x.p
        ORDER BY c.grp COLLATE "C", c.win COLLATE "C", c.pool COLLATE "C" FOR UPDATE OF c LOOP
      seen := seen + 1;
      IF r.o <= nb THEN
        st := bn[4 * r.o - 3];
        IF st > r.start THEN
          c_start[r.o] := st;
        ELSE
          c_start[r.o] := r.start; c_req[r.o] := r.requests; c_tok[r.o] := r.tokens; c_spd[r.o] := r.spend_micros;
        END IF;
        c_rtok[r.o] := r.reserved_tokens; c_rspd[r.o] := r.reserved_spend_micros;
      ELSE
        c_in[r.o] := r.inflight;
      END IF;
    END LOOP;
    EXIT WHEN seen = n;
    seen := 0;
    INSERT INTO limit_counts (grp, win, pool, start, requests, tokens, spend_micros)
      SELECT x.g, x.w, x.p, COALESCE(bn[4 * x.o - 3], 0), COALESCE(bn[4 * x.o - 2], 0), COALESCE(bn[4 * x.o - 1], 0), COALESCE(bn[4 * x.o], 0)
      FROM unnest(cg, cw, cp) WITH ORDINALITY AS x(g, w, p, o) ORDER BY x.g COLLATE "C", x.w COLLATE "C", x.p COLLATE "C"
      ON CONFLICT DO NOTHING;
  END LOOP;
  -- What ended: reservations and slots given back, then real usage in.
  nc := COALESCE(e[p], 0); p := p + 1;
  FOR j IN 0 .. nc - 1 LOOP
    ix := e[p] + 1; rt := e[p + 1]; rs := e[p + 2]; p := p + 3;
    c_rtok[ix] := GREATEST(0, c_rtok[ix] - rt); c_rspd[ix] := GREATEST(0, c_rspd[ix] - rs);
    h_tok[ix] := h_tok[ix] - rt; h_spd[ix] := h_spd[ix] - rs;
  END LOOP;
  nx := COALESCE(e[p], 0); p := p + 1;
  FOR j IN 0 .. nx - 1 LOOP
    ix := nb + e[p] + 1;
    c_in[ix] := GREATEST(0, c_in[ix] - e[p + 1]);
    h_in[ix] := h_in[ix] - e[p + 1];
    p := p + 2;
  END LOOP;
  nu := COALESCE(e[p], 0); p := p + 1;
  FOR j IN 0 .. nu - 1 LOOP
    ix := e[p] + 1; st := e[p + 1];
    -- A window that rolled over since admission starts clean; the usage belongs to the new one.
    IF st > c_start[ix] THEN
      c_start[ix] := st; c_req[ix] := 0; c_tok[ix] := 0; c_spd[ix] := 0;
    END IF;
    c_req[ix] := c_req[ix] + e[p + 2]; c_tok[ix] := c_tok[ix] + e[p + 3]; c_spd[ix] := c_spd[ix] + e[p + 4];
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
      IF c_spd[ix] >= cap THEN why := 'budget'; at := j; EXIT; END IF;
      IF c_spd[ix] + c_rspd[ix] >= cap THEN why := 'budget_held'; at := j; EXIT; END IF;
    END LOOP;
    IF why IS NULL THEN
      FOR j IN 0 .. nc - 1 LOOP
        ix := a[cs + 4 * j] + 1;
        cap := a[cs + 4 * j + 1];
        IF cap >= 0 AND c_req[ix] >= cap THEN why := 'requests'; at := j; EXIT; END IF;
        cap := a[cs + 4 * j + 2];
        IF cap >= 0 AND c_tok[ix] + c_rtok[ix] >= cap THEN
          why := CASE WHEN c_tok[ix] >= cap THEN 'tokens' ELSE 'tokens_held' END; at := j; EXIT;
        END IF;
      END LOOP;
    END IF;
    IF why IS NULL THEN
      FOR j IN 0 .. nx - 1 LOOP
        IF c_in[nb + a[xs + 2 * j] + 1] >= a[xs + 2 * j + 1] THEN why := 'concurrent'; at := j; EXIT; END IF;
      END LOOP;
    END IF;
    IF why IS NOT NULL THEN
      answers := answers || jsonb_build_array(jsonb_build_array(why, at));
      CONTINUE;
    END IF;
    FOR j IN 0 .. nu - 1 LOOP
      ix := a[us + j] + 1;
      c_req[ix] := c_req[ix] + 1; c_spd[ix] := c_spd[ix] + fee;
      c_rtok[ix] := c_rtok[ix] + rt; c_rspd[ix] := c_rspd[ix] + rs;
      h_tok[ix] := h_tok[ix] + rt; h_spd[ix] := h_spd[ix] + rs;
    END LOOP;
    FOR j IN 0 .. nx - 1 LOOP
      ix := nb + a[xs + 2 * j] + 1;
      c_in[ix] := c_in[ix] + 1;
      h_in[ix] := h_in[ix] + 1;
    END LOOP;
    answers := answers || jsonb_build_array(true);
  END LOOP;
  -- Every write of the batch in one statement. Holdings are deltas: one given back after it was freed
  -- (reset, or taken for gone) stays at 0 when freed.
  WITH u AS (
    UPDATE limit_counts c SET start = c_start[x.o], requests = c_req[x.o], tokens = c_tok[x.o], spend_micros = c_spd[x.o],
        reserved_tokens = c_rtok[x.o], reserved_spend_micros = c_rspd[x.o], inflight = c_in[x.o]
      FROM unnest(cg, cw, cp) WITH ORDINALITY AS x(g, w, p, o)
      WHERE c.grp = x.g AND c.win = x.w AND c.pool = x.p
  )
  INSERT INTO limit_holdings AS h (holder, grp, win, pool, reserved_tokens, reserved_spend_micros, inflight)
    SELECT p_holder, x.g, x.w, x.p, h_tok[x.o], h_spd[x.o], h_in[x.o] FROM unnest(cg, cw, cp) WITH ORDINALITY AS x(g, w, p, o)
      WHERE h_tok[x.o] <> 0 OR h_spd[x.o] <> 0 OR h_in[x.o] <> 0
    ON CONFLICT (holder, grp, win, pool) DO UPDATE SET reserved_tokens = h.reserved_tokens + excluded.reserved_tokens,
      reserved_spend_micros = h.reserved_spend_micros + excluded.reserved_spend_micros, inflight = h.inflight + excluded.inflight;
  FOR i IN 1 .. nb LOOP
    counts := counts || jsonb_build_array(jsonb_build_array(c_req[i], c_tok[i], c_spd[i]));
  END LOOP;
  RETURN jsonb_build_object('a', answers, 'b', counts);
END
$fn$;`,
};
