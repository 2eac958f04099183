"""Programs for the plan interpreter (kernels/interpret.h): a pipeline, an aggregate's
finalisation or a small sort as register instructions and tables, run by one prebuilt kernel
while the query's own kernel compiles. program.py encodes (and hoists what no row changes),
expressions.py translates expressions, kernels.py pipelines and finalisations, probes.py join
probes, builds.py join builds, sorts.py small sorts."""
