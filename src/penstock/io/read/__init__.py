"""How file bytes reach the device, whatever the format: the I/O threads and their pinned
buffers, the read path chosen by measuring, files' page cache copied by DMA, read-ahead."""
