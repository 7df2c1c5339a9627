"""The script itself has no loop: it comes from another module."""
from _helper_loop import fit

if __name__ == "__main__":
    fit()
    print("done")
