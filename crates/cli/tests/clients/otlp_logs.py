"""Sends log records with the OpenTelemetry Python SDK's OTLP/HTTP exporter.

Reads a JSON job on stdin: {"endpoint", "gzip", "resource": {...},
"scope": [name, version], "records": [{"time_ns", "observed_ns", "body",
"severity_text", "severity_number", "attributes", "trace_id", "span_id"}]}.
Records go through a LoggerProvider with a SimpleLogRecordProcessor; the
exporter's results are recorded and printed as {"results": [...]}.
"""
import json
import sys

from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, LogRecord
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import TraceFlags

RESULTS = []


class RecordingExporter(OTLPLogExporter):
    def export(self, batch):
        result = super().export(batch)
        RESULTS.append(result.name)
        return result


def main():
    job = json.load(sys.stdin)
    compression = Compression.Gzip if job.get("gzip") else Compression.NoCompression
    exporter = RecordingExporter(endpoint=job["endpoint"], compression=compression, timeout=30)
    resource = Resource.create(job["resource"])
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    name, version = job["scope"]
    logger = provider.get_logger(name, version)
    for r in job["records"]:
        logger.emit(
            LogRecord(
                timestamp=r.get("time_ns"),
                observed_timestamp=r.get("observed_ns"),
                trace_id=int(r["trace_id"], 16) if r.get("trace_id") else 0,
                span_id=int(r["span_id"], 16) if r.get("span_id") else 0,
                trace_flags=TraceFlags(1) if r.get("trace_id") else TraceFlags(0),
                severity_text=r.get("severity_text"),
                severity_number=SeverityNumber(r["severity_number"]) if r.get("severity_number") else None,
                body=r.get("body"),
                resource=resource,
                attributes=r.get("attributes") or {},
            )
        )
    provider.force_flush()
    provider.shutdown()
    print(json.dumps({"results": RESULTS}))


if __name__ == "__main__":
    main()
