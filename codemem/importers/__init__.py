"""Bulk imports into a memory, through the same path as an Add: Claude Code transcripts
(`transcripts`, read by `claude_code`) and a git repository's history (`git`, read by
`codemem.git`). Each importer reports what it read and stored (`report`)."""
