-- Provenance index version 2 (`shared::domain::provenance::fingerprint::VERSION`):
-- line hashes, and every `code.edit` indexed by each k-gram and line hash it
-- wrote. A projection with no events applied yet is built by this version; one
-- that has events keeps version 1, and `explain` asks for `engram-ingestor
-- replay` (which builds a fresh projection) until it is rebuilt.
UPDATE engram_state SET value = '2'
WHERE key = 'provenance_version'
  AND COALESCE((SELECT CAST(value AS INTEGER) FROM engram_state WHERE key = 'applied_lsn'), 0) = 0;
