module github.com/sluicenet/sluice/benchmarks

go 1.26.0

replace github.com/sluicenet/sluice => ../

require (
	github.com/cloudwego/netpoll v0.7.2
	github.com/lesismal/llib v1.2.5
	github.com/lesismal/nbio v1.6.8
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/sluicenet/sluice v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	github.com/tidwall/evio v1.0.8
	github.com/valyala/fasthttp v1.78.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
	github.com/kavu/go_reuseport v1.5.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)
