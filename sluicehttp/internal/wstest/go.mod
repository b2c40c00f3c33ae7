module github.com/sluicenet/sluice/sluicehttp/internal/wstest

go 1.26.0

require (
	github.com/gorilla/websocket v1.5.3
	github.com/sluicenet/sluice v0.0.0
)

require (
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/sluicenet/sluice => ../../..
