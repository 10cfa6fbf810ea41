-- A minimal opencode.db (v1.2+ schema subset) built by the tests.
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT, directory TEXT, title TEXT, version TEXT, time_created INTEGER, time_updated INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
INSERT INTO session VALUES ('ses_db1', 'p1', NULL, 's', '/home/dev/db', 'Parent', '1.2.0', 1767330000000, 1767330009000);
INSERT INTO session VALUES ('ses_db2', 'p1', 'ses_db1', 's2', '/home/dev/db', 'Child', '1.2.0', 1767330005000, 1767330009000);
INSERT INTO message VALUES ('msg_a', 'ses_db1', 1767330001000, 1767330001000, '{"role":"user","time":{"created":1767330001000}}');
INSERT INTO message VALUES ('msg_b', 'ses_db1', 1767330002000, 1767330002000, '{"role":"assistant","modelID":"gpt-5","time":{"created":1767330002000}}');
INSERT INTO message VALUES ('msg_c', 'ses_db2', 1767330006000, 1767330006000, '{"role":"user","time":{"created":1767330006000}}');
INSERT INTO part VALUES ('prt_a', 'msg_a', 'ses_db1', 1767330001000, 1767330001000, '{"type":"text","text":"Never commit generated files. password=PLANTEDdbpassword"}');
INSERT INTO part VALUES ('prt_b', 'msg_b', 'ses_db1', 1767330002000, 1767330002000, '{"type":"tool","callID":"call_w","tool":"write","state":{"status":"completed","input":{"filePath":"/home/dev/db/a.txt","content":"x\ny\n"},"output":"ok","metadata":{}}}');
INSERT INTO part VALUES ('prt_c', 'msg_b', 'ses_db1', 1767330002100, 1767330002100, '{"type":"reasoning","text":"thinking"}');
INSERT INTO part VALUES ('prt_d', 'msg_c', 'ses_db2', 1767330006000, 1767330006000, '{"type":"text","text":"Sub task with sk-ant-PLANTEDabcdefghijklmnopqrstuv"}');
