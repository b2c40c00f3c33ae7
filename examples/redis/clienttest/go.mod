module github.com/sluicenet/sluice/examples/redis/clienttest

go 1.26.0

replace github.com/sluicenet/sluice => ../../..

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/sluicenet/sluice v0.0.0-00010101000000-000000000000 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

tool github.com/sluicenet/sluice/examples/redis
