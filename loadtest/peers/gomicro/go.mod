module goro.dev/loadtest/peers/gomicro

go 1.19
