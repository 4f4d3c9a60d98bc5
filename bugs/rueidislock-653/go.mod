module github.com/locktorture/locktorture/bugs/rueidislock-653

go 1.26.8

require github.com/locktorture/locktorture/bugs/rueidislock-adapter v0.0.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/locktorture/locktorture v0.0.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/redis/rueidis v1.0.49 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	mvdan.cc/sh/v3 v3.12.0 // indirect
)

replace (
	github.com/locktorture/locktorture => ../..
	github.com/locktorture/locktorture/bugs/rueidislock-adapter => ../rueidislock-adapter
)
