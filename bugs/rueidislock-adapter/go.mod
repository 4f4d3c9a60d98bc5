module github.com/locktorture/locktorture/bugs/rueidislock-adapter

go 1.26.8

require (
	github.com/locktorture/locktorture v0.0.0
	github.com/redis/rueidis v1.0.43
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	mvdan.cc/sh/v3 v3.12.0 // indirect
)

replace github.com/locktorture/locktorture => ../..
