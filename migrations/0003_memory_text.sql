-- Each memory's analysed text: its bag of words (hashed, stemmed terms with
-- their counts) and the text facts the rankers read (a question, a number, a
-- time, the first person, proper nouns), in the form of
-- `shared::rank::text::MemoryText::encode`. The apply writes it with the
-- content, so a ranking never tokenizes the memories it reads. NULL (rows
-- of an older schema) or another analysis version means "analyse the
-- content": a connection opening the store refills the column (see
-- `engram_state.text_version`).
ALTER TABLE memories ADD COLUMN text_terms BLOB;
