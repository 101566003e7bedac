-- 0020: who did what to the ledger's configuration (docs/security.md). One row per admin action
-- — apps, products, keys, webhooks, grants and revocations, extensions asked of Apple — with the
-- actor (the key's name), the request it came with, what it targeted, and the resource before and
-- after as the API shows it (secrets never: the API never shows them). Append-only like the event
-- log, by privileges and by triggers.
CREATE TABLE ledger.audit_log (
    position    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,
    key_id      uuid,
    request_id  text NOT NULL,
    action      text NOT NULL,
    target      text NOT NULL,
    bundle_id   text,
    before      jsonb,
    after       jsonb
);
COMMENT ON TABLE ledger.audit_log IS 'Every admin action: actor, request, target, before and after (secrets never). Append-only.';

-- ledger.refuse_rewrite (0001) names ledger.events in its message; this one names the table it
-- guards, for this and any later append-only table.
CREATE FUNCTION ledger.refuse_append_only_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%.% is append-only: % is not allowed', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'LE003';
END
$$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON ledger.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_append_only_rewrite();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON ledger.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_append_only_rewrite();

REVOKE ALL ON ledger.audit_log FROM PUBLIC;
GRANT SELECT, INSERT ON ledger.audit_log TO ledger_app;
