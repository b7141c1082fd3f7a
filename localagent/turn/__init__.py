"""One model turn as the loop sees it: the turn interface, the strings the model reads, its feedback."""
