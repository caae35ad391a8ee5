// `ess-sim launch`: engines' launch and benchmark commands as serving scenarios, every flag
// accounted for (sim/config/launch_command.h).
#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/config/launch_command.h"
#include "sim/config/scenario.h"

using namespace ess;

namespace {

LaunchTranslation translate(const std::string& serve, const std::string& bench, std::optional<std::string> engine = std::nullopt) {
  LaunchRequest q;
  q.serve = serve;
  q.bench = bench;
  q.hardware = "h200-sxm-measured";
  q.engine = std::move(engine);
  return translate_launch(q);
}

const FlagReport& reported(const LaunchTranslation& t, const std::string& flag) {
  for (const auto& r : t.report) {
    if (r.flag == flag) return r;
  }
  FAIL("no report of " << flag);
  throw std::logic_error("unreachable");
}

const std::string kDstackBench =
    "python3 -m sglang.bench_serving --backend vllm --dataset-name random --random-input-len 3200 --random-output-len 800 "
    "--random-range-ratio 1 --num-prompts 500 --max-concurrency 64 --ignore-eos";

}  // namespace

TEST_CASE("launch: words split like a shell", "[config][launch]") {
  CHECK(split_command("vllm serve 'a b' \"c d\" e\\ f \\\n -tp 8", "x") ==
        std::vector<std::string>{"vllm", "serve", "a b", "c d", "e f", "-tp", "8"});
  CHECK_THROWS_WITH(split_command("vllm serve 'a", "the launch command"), Catch::Contains("open quote"));
}

TEST_CASE("launch: vLLM's default TP8 launch under dstack's closed loop is the bundled deployment's layout and load", "[config][launch]") {
  const auto t = translate("VLLM_ATTENTION_BACKEND=FLASHMLA vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8 "
                           "--trust-remote-code --port 8000",
                           kDstackBench, "vllm-0.7");
  const auto& d = t.scenario;
  CHECK(d["parallelism"] == nlohmann::ordered_json({{"attention_dp", 1}, {"tensor_parallel", 8}, {"expert_parallel", 1}}));
  CHECK(d["model"]["preset"] == "deepseek-v3");
  CHECK(d["model"]["attention"]["cache_bytes_per_token"]["value"] == "1152B");
  CHECK(d["engine"]["preset"] == "vllm-0.7");
  CHECK(d["engine"]["mla_kernel"] == "flashmla");
  const auto& a = d["serving"]["arrivals"];
  CHECK(a["process"] == "concurrency");
  CHECK(a["concurrency"] == 64);
  CHECK(a["requests"] == 500);
  CHECK(a["prompt_tokens"] == 3200);  // range ratio 1 in SGLang's client: exactly the length
  CHECK(a["output_tokens"] == 800);
  CHECK(d["serving"]["prefill"]["tokens_per_gpu"] == 8192);
  CHECK(d["serving"]["max_batch_per_gpu"] == 256);  // vLLM V0's max_num_seqs
  CHECK(reported(t, "--trust-remote-code").fate == FlagFate::ignored);
  CHECK(reported(t, "--tensor-parallel-size 8").fate == FlagFate::used);
  CHECK(reported(t, "--ignore-eos").fate == FlagFate::ignored);
  // It loads as a scenario (translate_launch checks), with the layout's all-reduce MoE.
  const Scenario s = load_scenario_text(d.dump(), "test");
  CHECK(s.parallelism.moe_tensor_parallel == 8);
}

TEST_CASE("launch: each engine's layout flags map as scenarios/README.md's table says", "[config][launch]") {
  const std::string bench = "vllm bench serve --random-input-len 1000 --random-output-len 2000 --num-prompts 500 --max-concurrency 64";
  const auto layout = [](const LaunchTranslation& t) { return t.scenario["parallelism"]; };
  CHECK(layout(translate("vllm serve deepseek-ai/DeepSeek-V3.2-Exp -tp 8 --enable-expert-parallel", bench)) ==
        nlohmann::ordered_json({{"attention_dp", 1}, {"tensor_parallel", 8}, {"expert_parallel", 8}}));
  CHECK(layout(translate("vllm serve deepseek-ai/DeepSeek-R1 -dp 8 --enable-expert-parallel", bench)) ==
        nlohmann::ordered_json({{"attention_dp", 8}, {"tensor_parallel", 1}, {"expert_parallel", 8}}));
  const auto sglang_dp = translate("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 --enable-dp-attention", bench);
  CHECK(layout(sglang_dp) ==
        nlohmann::ordered_json({{"attention_dp", 8}, {"tensor_parallel", 1}, {"expert_parallel", 1}, {"moe_tensor_parallel", 8}}));
  CHECK(sglang_dp.scenario["serving"]["prefill"]["tokens_per_gpu"] == 1024);  // 8,192 // dp_size
  const auto sglang_04 = translate("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --enable-dp-attention --dp 8",
                                   bench, "sglang-0.4");
  CHECK(sglang_04.scenario["serving"]["prefill"]["tokens_per_gpu"] == 4096);  // 0.4.x: // 2
  CHECK(layout(translate("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 --enable-dp-attention "
                         "--ep 8 --moe-a2a-backend deepep",
                         bench)) == nlohmann::ordered_json({{"attention_dp", 8}, {"tensor_parallel", 1}, {"expert_parallel", 8}}));
  const auto trt = translate("trtllm-serve deepseek-ai/DeepSeek-R1 --backend pytorch --tp_size 8 --ep_size 4 --max_batch_size 512 "
                             "--max_num_tokens 16384",
                             bench, "trtllm-0.17");
  CHECK(layout(trt) == nlohmann::ordered_json({{"attention_dp", 1}, {"tensor_parallel", 8}, {"expert_parallel", 4}}));
  CHECK(trt.scenario["serving"]["prefill"]["tokens_per_gpu"] == 16384);
  CHECK(trt.scenario["serving"]["max_batch_per_gpu"] == 512);
  // vLLM's bench serve draws lengths in [len (1 - r), len (1 + r)].
  const auto spread = translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 8", bench + " --random-range-ratio 0.5");
  CHECK(spread.scenario["serving"]["arrivals"]["prompt_tokens"] == nlohmann::ordered_json({{"min", 500}, {"max", 1500}}));
  // A finite rate is Poisson for num-prompts / rate seconds.
  const auto poisson = translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 8",
                                 "vllm bench serve --random-input-len 1000 --random-output-len 200 --num-prompts 100 --request-rate 4");
  CHECK(poisson.scenario["serving"]["arrivals"]["process"] == "poisson");
  CHECK(poisson.scenario["serving"]["duration"] == "25s");
}

TEST_CASE("launch: flags it cannot model are refused with the flag named, never dropped", "[config][launch]") {
  const std::string bench = "vllm bench serve --random-input-len 1000 --random-output-len 2000 --num-prompts 50";
  CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --enable-expert-paralel", bench),
                    Catch::Contains("--enable-expert-paralel") && Catch::Contains("did you mean") &&
                        Catch::Contains("--enable-expert-parallel"));
  CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --speculative-config '{}'", bench),
                    Catch::Contains("--speculative-config") && Catch::Contains("workload.mtp"));
  CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp eight", bench), Catch::Contains("positive integer"));
  CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 4 -dp 2", bench), Catch::Contains("does not model"));
  CHECK_THROWS_WITH(translate("vllm serve meta-llama/Llama-3.1-70B -tp 8", bench), Catch::Contains("DeepSeek"));
  CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 4", bench), Catch::Contains("whole nodes"));
  CHECK_THROWS_WITH(translate("ollama serve", bench), Catch::Contains("not a command ess-sim reads"));
  CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 8", "vllm bench serve --dataset-name sharegpt"),
                    Catch::Contains("random dataset"));
  CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 8", bench, "sglang"), Catch::Contains("not a preset of the launch's engine"));
  // Assumed flags are reported with what ess-sim does instead.
  const auto t = translate("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --mem-fraction-static 0.85", bench);
  const FlagReport& r = reported(t, "--mem-fraction-static 0.85");
  CHECK(r.fate == FlagFate::assumed);
  CHECK_THAT(r.effect, Catch::Contains("memory plan"));
}

TEST_CASE("launch: a command that is not UTF-8 is refused, not written into the scenario", "[config][launch]") {
  // Found by tests/fuzz/launch_fuzz.cpp: a byte 0xC1 in the model path crashed the JSON writer.
  CHECK_THROWS_WITH(translate("trtllm-serve 'deepsee\xC1-ai/DeepSeek-R1' --tp_size 8",
                              "python3 benchmarks/benchmark_serving.py --random-input-len 100 --random-output-len 10"),
                    Catch::Contains("not UTF-8") && Catch::Contains("\\xC1"));
}

TEST_CASE("launch: a range ratio outside [0, 1] is refused", "[config][launch]") {
  // Found by tests/fuzz/launch_fuzz.cpp: "inf" reached a conversion to an integer length.
  for (const std::string r : {"Inf", "1.5"}) {
    CHECK_THROWS_WITH(translate("vllm serve deepseek-ai/DeepSeek-R1 -tp 8",
                                "python3 -m sglang.bench_serving --random-input-len 100 --random-output-len 10 --random-range-ratio " + r),
                      Catch::Contains("--random-range-ratio") && Catch::Contains("[0, 1]"));
  }
}
