-- Claims with a fence (issue 27): each serving process is an incarnation,
-- a fresh id per start, with a heartbeat; a claim names the incarnation
-- that holds it, so that a dead incarnation's claims are taken over once
-- its heartbeat lapses rather than when a timer runs out.
ALTER TABLE idempotency ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE TABLE incarnations (
    id           TEXT PRIMARY KEY,
    started_at   TEXT COLLATE "C" NOT NULL,
    heartbeat_at TEXT COLLATE "C" NOT NULL
);
