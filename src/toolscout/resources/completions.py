"""`completion/complete` for upstream prompts and resource templates, routed to their server.

The reference names a prompt or a resource template as the gateway lists it (`server__prompt`,
`toolscout://server/<template>`) or as its server does (routing.py). The upstream is asked with
its own name; a server that does not offer completions gets an empty list, which is what the
spec's "no suggestions" looks like, rather than an error for the client to handle.
"""

from __future__ import annotations

import mcp_types as types
from mcp import Client

from toolscout.resources.core import Mirror
from toolscout.upstream.calls import without_hop_metadata

NO_COMPLETION = types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))


async def complete(mirror: Mirror, params: types.CompleteRequestParams) -> types.CompleteResult:
    """The upstream's completions for the prompt or resource template `params.ref` names."""
    ref = params.ref
    upstream_ref: types.PromptReference | types.ResourceTemplateReference
    if isinstance(ref, types.PromptReference):
        server, prompt = await mirror.find_prompt(ref.name)
        await mirror.admit("prompt", server, prompt)
        upstream_ref = ref.model_copy(update={"name": prompt})
    else:
        server, template = await mirror.route_template(ref.uri)
        await mirror.admit("template", server, template)
        upstream_ref = ref.model_copy(update={"uri": template})
    upstream = await mirror.upstreams.live_upstream(server)
    capabilities = upstream.server_capabilities
    if capabilities is None or capabilities.completions is None:
        return NO_COMPLETION
    context = params.context.arguments if params.context is not None else None

    async def ask(client: Client) -> types.CompleteResult:
        argument = {"name": params.argument.name, "value": params.argument.value}
        return await client.complete(upstream_ref, argument, context)

    return without_hop_metadata(await upstream.request(f"completion/complete {params.argument.name}", ask))
