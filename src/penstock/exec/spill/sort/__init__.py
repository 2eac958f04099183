"""The out-of-core sort (`penstock sort`, Connection.sort, ORDER BY past memory): its plan,
input, sample, partition and merge passes, chunk sorters, sort keys, output files and the
command's Arrow pool."""
