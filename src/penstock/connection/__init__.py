"""What a Connection (penstock/api.py) is made of: a statement planned and compiled
(prepared.py), its result piece by piece (streaming.py), EXPLAIN text (explain.py), batches of
Hamming k-NN searches (knn_search.py), the types of DataFusion's results (plain_types.py),
work watched while it cannot stop (watched.py) and the process's start-up work
(process_warm_up.py). interface.py: what these parts use of the Connection, so that none
imports penstock.api."""
