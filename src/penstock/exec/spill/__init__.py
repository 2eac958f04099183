"""Work that does not fit its memory budget: spill directories, rows moved off the device,
rows scattered by partition, the pipeline of stage threads; the out-of-core sort in sort/."""
