cuda = None
git_version = "fake"
