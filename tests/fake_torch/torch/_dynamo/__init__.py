def is_compiling():  # torch 2.1 / 2.2's name (torch.compiler.is_compiling came in 2.3)
    return False
