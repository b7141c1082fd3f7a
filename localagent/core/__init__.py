"""What every part shares: messages, events, cancelling, and reading the user's files and folders."""
