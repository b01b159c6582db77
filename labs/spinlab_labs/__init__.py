"""spinlab's classroom labs: the registry of labs, their checkers' shared vocabulary, and the
`spinlab lab` sub-command (cli.py). Each lab is a folder beside this package (labs/N-name/) with
its worksheet (README.md), its experiment spec(s) and check.py."""
