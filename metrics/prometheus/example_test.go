package prometheus_test

import (
	"log"
	"net/http"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicenet/sluice"
	sluiceprom "github.com/sluicenet/sluice/metrics/prometheus"
)

// An engine's counters on /metrics, beside the Go runtime's.
func ExampleNewCollector() {
	eng, err := sluice.Start(sluice.BuiltinEventEngine{}, "tcp://127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	reg := prom.NewRegistry()
	reg.MustRegister(sluiceprom.NewCollector(eng.Stats, sluiceprom.Opts{}), prom.NewGoCollector())
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// http.ListenAndServe("127.0.0.1:9100", nil)
}
