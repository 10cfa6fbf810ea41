-- What a session's outcome was judged from: how many of the session's
-- content events (`session_events` rows) the labels were made from. Once the
-- projection holds more of them (a transcript ingested after the session
-- was labelled), the session waits to be labelled again. NULL: scored by a
-- build that did not record it (such a score is final).
ALTER TABLE session_scores ADD COLUMN content_events INTEGER;
