/** A loopback stand-in for Ollama's model list, `GET /api/tags` (shape of Ollama's API docs). */
import { type Peer, sendJson, startPeer } from "./serve.ts";

export const OLLAMA_TAGS = {
  models: [
    {
      name: "llama3.2:latest",
      model: "llama3.2:latest",
      modified_at: "2025-01-10T10:00:00.000000000Z",
      size: 2019393189,
      digest: "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
      details: {
        parent_model: "",
        format: "gguf",
        family: "llama",
        families: ["llama"],
        parameter_size: "3.2B",
        quantization_level: "Q4_K_M",
      },
    },
    {
      name: "qwen2.5:7b",
      model: "qwen2.5:7b",
      modified_at: "2025-01-09T10:00:00.000000000Z",
      size: 4683087332,
      digest: "845dbda0ea48ed749caafd9e6037047aa19acfcfd82e704d7ca97d631a0b697e",
      details: {
        parent_model: "",
        format: "gguf",
        family: "qwen2",
        families: ["qwen2"],
        parameter_size: "7.6B",
        quantization_level: "Q4_K_M",
      },
    },
  ],
};

export const startOllamaPeer = (): Promise<Peer> =>
  startPeer((req, res) => {
    if (req.method === "GET" && req.url === "/api/tags") return sendJson(res, 200, OLLAMA_TAGS);
    return sendJson(res, 404, { error: "not found" });
  });
