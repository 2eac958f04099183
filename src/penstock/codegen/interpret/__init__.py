"""Programs for the plan interpreter (kernels/interpret.h): a pipeline or an aggregate's
finalisation as register instructions, run by one prebuilt kernel while the query's own
kernel compiles. program.py encodes, expressions.py translates expressions, kernels.py
translates pipelines and finalisations, probes.py join probes."""
