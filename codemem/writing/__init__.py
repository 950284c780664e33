"""Every write of a `Memory`: Adds, bulk imports, deferred rebuilds and deletes
(`session_writer`); one worker runs every Add when several serve the same data directory
(`add_leader`), and a long session's card is rebuilt once its Adds go quiet
(`session_refresher`). A session's card and step rows are built in `derived_rows`; what is
stored of a session, and the caches that spare an Add reading it, in `session_state`."""
