module github.com/sluicenet/sluice

go 1.26.0

require (
	github.com/panjf2000/ants/v2 v2.12.1
	github.com/stretchr/testify v1.12.1
	github.com/valyala/bytebufferpool v1.0.0
	golang.org/x/sys v0.50.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.11.0 // indirect
)
