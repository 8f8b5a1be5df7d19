module goro.local/gohello

go 1.19
