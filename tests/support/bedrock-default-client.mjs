// The Bedrock runtime client exactly as a user builds it (its default request handler, which speaks
// HTTP/2), run by Node: one Converse and one ConverseStream against the endpoint in argv, printed as JSON.
// A private CA is trusted the way Node users do it, with NODE_EXTRA_CA_CERTS.
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from "@aws-sdk/client-bedrock-runtime";

const [endpoint, modelId] = process.argv.slice(2);
const client = new BedrockRuntimeClient({ region: "us-east-1", endpoint, maxAttempts: 1, token: { token: "unused-on-an-open-gateway" }, authSchemePreference: ["httpBearerAuth"] });
const messages = [{ role: "user", content: [{ text: "hello over h2" }] }];
try {
  const reply = await client.send(new ConverseCommand({ modelId, messages }));
  const streamed = await client.send(new ConverseStreamCommand({ modelId, messages }));
  let text = "";
  let events = 0;
  for await (const event of streamed.stream ?? []) {
    events++;
    text += event.contentBlockDelta?.delta?.text ?? "";
  }
  console.log(JSON.stringify({ converse: reply.output?.message?.content?.[0]?.text, stream: text, events, stop: reply.stopReason }));
} catch (error) {
  console.log(JSON.stringify({ error: `${error.name}: ${error.message}`, code: error.code }));
} finally {
  client.destroy();
}
