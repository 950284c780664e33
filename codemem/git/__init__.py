"""What codemem reads from git: a repository's history as experiences, and its identity.

`log` walks the history (`records` parses the streamed `git log` into bounded commits),
`cards` turns a change into its experience, `facts` reads what a change says about itself,
`staleness` marks changes whose code later history edited, `releases` and `versions` name
the release each change came after, and `repo_id` names the memory a directory belongs to.
"""
