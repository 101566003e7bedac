-- Evidence bodies (a StoreKit 2 JWS is ~4 KB with its certificate chain) are compressed with lz4
-- rather than PostgreSQL's default pglz: pglz_compress was a visible share of PostgreSQL's time
-- per ingestion, lz4 does the same job several times faster. Rows already stored keep their
-- compression. A server built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE ledger.evidence ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 is not available in this PostgreSQL build; evidence stays compressed with pglz';
END
$$;
