// kfake-peer starts franz-go's kfake (an in-process fake Kafka cluster, no replication) on the
// 127.0.0.1 ports it is given and serves until SIGTERM or SIGINT. kafkaref's peer "kfake"
// (chaos/peers/kfake.py) builds it with `go build` and runs it like any broker process.
//
//	kfake-peer -ports 40001,40002,40003 [-data-dir DIR] [-log-level warn]
//
// One broker per port, all in this one process. With -data-dir kfake keeps its state on disk
// and reloads it when started again on the same directory (a restart after a kill).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	portList := flag.String("ports", "", "comma-separated 127.0.0.1 ports, one broker each")
	dataDir := flag.String("data-dir", "", "persist the cluster's state here (survives a restart)")
	logLevel := flag.String("log-level", "warn", "none, error, warn, info or debug")
	flag.Parse()

	ports, err := parsePorts(*portList)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake-peer: %v\n", err)
		os.Exit(2)
	}
	levels := map[string]kfake.LogLevel{"none": kfake.LogLevelNone, "error": kfake.LogLevelError,
		"warn": kfake.LogLevelWarn, "info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug}
	level, known := levels[strings.ToLower(*logLevel)]
	if !known {
		fmt.Fprintf(os.Stderr, "kfake-peer: unknown -log-level %q\n", *logLevel)
		os.Exit(2)
	}

	opts := []kfake.Opt{
		kfake.Ports(ports...),
		kfake.NumBrokers(len(ports)),
		// Apache Kafka's default auto.create.topics.enable=true, which clients and suites expect.
		kfake.AllowAutoTopicCreation(),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level)),
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake-peer: cannot start: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("kfake listening on %s\n", strings.Join(cluster.ListenAddrs(), ","))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	cluster.Close() // flushes the persisted state
}

func parsePorts(list string) ([]int, error) {
	if list == "" {
		return nil, fmt.Errorf("-ports is required")
	}
	var ports []int
	for _, field := range strings.Split(list, ",") {
		port, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("bad port %q in -ports", field)
		}
		ports = append(ports, port)
	}
	return ports, nil
}
