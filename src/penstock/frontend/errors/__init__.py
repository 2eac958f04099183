"""PostgreSQL's errors: statements it rejects that DataFusion answers, and DataFusion's messages in PostgreSQL's words with SQLSTATEs."""
