"""`GET /v1/models`: the model this server runs, then the other installed models, which a
request cannot use here (`loaded: false`); each would need its own `localagent serve --model NAME`."""

from __future__ import annotations

from typing import Any

from localagent.models.registry import installed_pieces, is_installed, load_registry
from localagent.serve.engine import ServedModel
from localagent.serve.errors import RequestError


def model_list(served: ServedModel) -> list[dict[str, Any]]:
    others = [
        entry.name
        for entry in load_registry().values()
        if entry.name != served.id and (is_installed(entry) or installed_pieces(entry) is not None)
    ]
    return [_model(served.id, loaded=True), *(_model(name, loaded=False) for name in others)]


def _model(name: str, *, loaded: bool) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "localagent", "loaded": loaded}


def unknown_model(name: str, served: ServedModel) -> RequestError:
    if any(entry["id"] == name for entry in model_list(served)):
        message = (
            f"The model {name!r} is installed, but this server runs {served.id!r}; "
            f"start `localagent serve --model {name}` to serve it."
        )
    else:
        message = f"The model {name!r} does not exist on this server, which runs {served.id!r}."
    return RequestError(message, status=404, param="model", code="model_not_found")
