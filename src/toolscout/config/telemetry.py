"""The `telemetry` section: `/metrics` on `serve --transport http`, and traces sent to an OTLP collector.

```yaml
telemetry:
  metrics:
    enabled: true        # default
    public: false        # default: /metrics needs an admin key when the gateway authenticates
  traces:
    enabled: true        # default: off, unless OTEL_EXPORTER_OTLP_ENDPOINT is set
    endpoint: http://localhost:4318   # else OTEL_EXPORTER_OTLP_ENDPOINT, else this
    serviceName: toolscout            # else OTEL_SERVICE_NAME, else toolscout
```
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class MetricsConfig(_Model):
    """`/metrics` in the Prometheus text format."""

    enabled: bool = True
    """Count and serve the metrics; off, nothing is recorded and `/metrics` answers 404."""
    public: bool = False
    """Let any request read `/metrics`, without a credential, even when the gateway authenticates (a
    scraper on a private network). Off: with keys or tokens it needs an admin key, as the HTTP API does."""


class TracesConfig(_Model):
    """OpenTelemetry traces over OTLP/HTTP (the `toolscout[otel]` extra)."""

    enabled: bool | None = None
    """On or off; unset: on when the OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) variable is set."""
    endpoint: str | None = None
    """The collector's base URL (`/v1/traces` is added); unset: OTEL_EXPORTER_OTLP_ENDPOINT, else
    `http://localhost:4318`."""
    service_name: str | None = Field(default=None, min_length=1)
    """`service.name` of the spans; unset: OTEL_SERVICE_NAME, else `toolscout`."""

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(f"must be an http:// or https:// URL (OTLP over HTTP), got {url!r}")
        return url


class TelemetryConfig(_Model):
    """What the gateway tells its operator: metrics and traces."""

    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    traces: TracesConfig = Field(default_factory=TracesConfig)
