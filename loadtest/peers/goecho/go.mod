module goro/loadtest/peers/goecho

go 1.19
