// Checks of the deployment files in docker/ (see docs/deploy.md): the Dockerfiles, the compose
// file and the Kubernetes manifests in docker/k8s/.
//
// - every YAML file parses, and every Kubernetes object has the fields its kind requires;
// - every image named is built by a Dockerfile of the repository (docker/<name>.Dockerfile), and
//   scripts/images.sh builds the CPU ones;
// - every container runs its image's program, a CMake target of the repository;
// - every flag passed to `llmload run`, `llmload merge` or `llmload-server` (manifests, compose,
//   the Dockerfiles' ENTRYPOINT/CMD) is listed by the built program's --help, and every key of a
//   scenario file in a ConfigMap is a flag of `llmload run`: a manifest that names a flag the
//   tool lacks fails here;
// - the Indexed Job, its --shard-count and the merge Job agree on the number of shards;
// - the Dockerfiles: multi-stage, non-root, sources and CMake options that exist, and the CUDA
//   variant's nvidia/cuda devel and runtime bases (that variant is not built on the project's
//   machines, which reach no container registry).
// docker/k8s/wait-job.sh is run in test_wait_job.cpp.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "subprocess.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kSource = LLMLOAD_SOURCE_DIR;
const fs::path kDocker = kSource / "docker";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string rel(const fs::path& path) { return fs::relative(path, kSource).string(); }

// The placeholders that docker/k8s/llmload-shards.yaml and llmload-merge.yaml document to fill in
// with sed at submission, replaced as that sed would.
std::string fill_placeholders(std::string text) {
  text = std::regex_replace(text, std::regex("@START_AT@"), "2030-01-02T03:04:05Z");
  return std::regex_replace(text, std::regex("@RUN_ID@"), "run-20300102-030405");
}

std::vector<fs::path> files_under(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> strings_of(const YAML::Node& node) {
  std::vector<std::string> out;
  if (!node) return out;
  if (node.IsScalar()) {
    // compose's string form of `command`: split on blanks (the files here use the list form).
    std::istringstream words(node.as<std::string>());
    for (std::string word; words >> word;) out.push_back(word);
    return out;
  }
  for (const auto& item : node) out.push_back(item.as<std::string>());
  return out;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// --- Dockerfiles --------------------------------------------------------------------------------

struct Instruction {
  std::string keyword;  // upper case
  std::string rest;
};

struct Dockerfile {
  fs::path path;
  std::vector<Instruction> instructions;
  std::string text;  // the whole file, comments included
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string user;
  std::map<std::string, std::string> arg_defaults;
  std::vector<std::string> stage_bases;  // FROM of each stage, unexpanded
};

std::vector<std::string> json_array(const std::string& text, const std::string& where) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_array()) throw std::runtime_error(where + ": not the exec (JSON array) form: " + text);
  std::vector<std::string> out;
  for (const auto& item : json) out.push_back(item.get<std::string>());
  return out;
}

Dockerfile parse_dockerfile(const fs::path& path) {
  Dockerfile df;
  df.path = path;
  df.text = read_text(path);
  std::istringstream lines(df.text);
  std::string line;
  std::string logical;
  auto flush = [&] {
    const auto start = logical.find_first_not_of(" \t");
    if (start == std::string::npos) {
      logical.clear();
      return;
    }
    logical = logical.substr(start);
    const auto space = logical.find_first_of(" \t");
    Instruction ins;
    ins.keyword = logical.substr(0, space);
    std::transform(ins.keyword.begin(), ins.keyword.end(), ins.keyword.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    ins.rest = space == std::string::npos ? "" : logical.substr(logical.find_first_not_of(" \t", space));
    df.instructions.push_back(ins);
    logical.clear();
  };
  while (std::getline(lines, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '#') continue;  // comments (also inside a continued RUN)
    if (!line.empty() && line.back() == '\\') {
      logical += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    logical += line;
    flush();
  }
  flush();
  for (const auto& ins : df.instructions) {
    const std::string where = rel(path) + " " + ins.keyword;
    if (ins.keyword == "ENTRYPOINT") df.entrypoint = json_array(ins.rest, where);
    if (ins.keyword == "CMD") df.cmd = json_array(ins.rest, where);
    if (ins.keyword == "USER") df.user = ins.rest;
    if (ins.keyword == "FROM") {
      std::istringstream words(ins.rest);
      std::string base;
      words >> base;
      df.stage_bases.push_back(base);
    }
    if (ins.keyword == "ARG") {
      const auto eq = ins.rest.find('=');
      if (eq != std::string::npos) df.arg_defaults[ins.rest.substr(0, eq)] = ins.rest.substr(eq + 1);
    }
  }
  return df;
}

const std::map<std::string, Dockerfile>& dockerfiles() {  // by image name (docker/<name>.Dockerfile)
  static const auto all = [] {
    std::map<std::string, Dockerfile> out;
    for (const auto& path : files_under(kDocker, ".Dockerfile")) {
      const auto name = path.filename().string();
      out.emplace(name.substr(0, name.size() - std::string(".Dockerfile").size()), parse_dockerfile(path));
    }
    return out;
  }();
  return all;
}

// --- the built programs' flags ------------------------------------------------------------------

std::string program_path(const std::string& program) {
  if (program == "llmload") return LLMLOAD_LLMLOAD_BIN;
  if (program == "llmload-server") return LLMLOAD_SERVER_BIN;
  return "";
}

// Flags listed by `PROGRAM [SUBCOMMAND] --help`; a subcommand the program lacks fails the test.
const std::set<std::string>& help_flags(const std::string& program, const std::string& subcommand) {
  static std::map<std::string, std::set<std::string>> cache;
  const auto key = program + " " + subcommand;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::vector<std::string> argv{program_path(program)};
  if (!subcommand.empty()) argv.push_back(subcommand);
  argv.push_back("--help");
  const auto res = llmload::testing::run(argv, std::chrono::seconds(20));
  std::set<std::string> flags;
  if (res.exit_code != 0) {
    ADD_FAILURE() << "`" << key << " --help` exited " << res.exit_code << " (" << res.err.substr(0, 300)
                  << "): the built " << program << " has no such subcommand";
  } else if (!subcommand.empty() &&
             !std::regex_search(res.out, std::regex("Usage: \\S+ " + subcommand + "( |$)"))) {
    // CLI11 answers `PROGRAM UNKNOWN --help` with the program's own help.
    ADD_FAILURE() << "the built " << program << " has no subcommand '" << subcommand << "' (`" << key
                  << " --help` shows no usage of it)";
  } else {
    static const std::regex flag_re("(^|[\\s,])(--[A-Za-z0-9][A-Za-z0-9-]*)");
    const auto& text = res.out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), flag_re); it != std::sregex_iterator(); ++it) {
      flags.insert((*it)[2].str());
    }
  }
  return cache.emplace(key, std::move(flags)).first->second;
}

// Checks every --flag of a full command line (program first) against the program's --help.
void check_command_flags(const std::vector<std::string>& argv, const std::string& where) {
  ASSERT_FALSE(argv.empty()) << where << ": empty command";
  const auto program = basename_of(argv[0]);
  ASSERT_FALSE(program_path(program).empty()) << where << ": runs '" << argv[0] << "', not llmload or llmload-server";
  std::string subcommand;
  std::size_t first_arg = 1;
  if (program == "llmload") {
    ASSERT_GT(argv.size(), 1u) << where << ": `llmload` without a subcommand";
    subcommand = argv[1];
    first_arg = 2;
  }
  const auto& known = help_flags(program, subcommand);
  const std::string shown = subcommand.empty() ? program : program + " " + subcommand;
  for (std::size_t i = first_arg; i < argv.size(); ++i) {
    const auto& token = argv[i];
    if (token.rfind("--", 0) != 0 || token == "--") continue;
    const auto flag = token.substr(0, token.find('='));
    EXPECT_TRUE(known.count(flag) == 1) << where << ": `" << shown << "` has no flag " << flag
                                        << " (not in the built `" << shown << " --help`)";
  }
}

std::string flag_value(const std::vector<std::string>& argv, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) return argv[i + 1];
    if (argv[i].rfind(flag + "=", 0) == 0) return argv[i].substr(flag.size() + 1);
  }
  return "";
}

// --- Kubernetes objects and containers ----------------------------------------------------------

struct Object {
  fs::path file;
  YAML::Node node;
  std::string kind;
  std::string name;
  std::string where() const { return rel(file) + " (" + kind + " " + name + ")"; }
};

const std::vector<Object>& k8s_objects() {
  static const auto all = [] {
    std::vector<Object> out;
    for (const auto& path : files_under(kDocker / "k8s", ".yaml")) {
      for (const auto& doc : YAML::LoadAll(fill_placeholders(read_text(path)))) {
        if (!doc || doc.IsNull()) continue;
        Object obj{path, doc, doc["kind"] ? doc["kind"].as<std::string>() : "",
                   doc["metadata"] && doc["metadata"]["name"] ? doc["metadata"]["name"].as<std::string>() : ""};
        out.push_back(obj);
      }
    }
    return out;
  }();
  return all;
}

struct Container {
  std::string where;
  std::string image;
  std::vector<std::string> argv;  // what runs: command + args (k8s), or the image's entrypoint + command (compose)
  YAML::Node node;                // the container (k8s) or service (compose)
  const Object* owner = nullptr;  // k8s only
};

std::vector<std::string> image_entrypoint(const std::string& image);

std::string image_name(const std::string& image) {  // "registry/path/llmload-server:cpu" -> "llmload-server"
  auto name = basename_of(image);
  return name.substr(0, name.find_first_of(":@"));
}
std::string image_tag(const std::string& image) {
  const auto name = basename_of(image);
  const auto colon = name.find(':');
  return colon == std::string::npos ? "latest" : name.substr(colon + 1);
}

std::vector<std::string> image_entrypoint(const std::string& image) {
  const auto it = dockerfiles().find(image_name(image));
  return it == dockerfiles().end() ? std::vector<std::string>{} : it->second.entrypoint;
}

const std::vector<Container>& containers() {
  static const auto all = [] {
    std::vector<Container> out;
    for (const auto& obj : k8s_objects()) {
      if (obj.kind != "Job" && obj.kind != "Deployment") continue;
      const auto pod = obj.node["spec"]["template"]["spec"];
      for (const char* list : {"initContainers", "containers"}) {
        if (!pod[list]) continue;
        for (const auto& c : pod[list]) {
          Container ct;
          ct.where = obj.where() + " container " + (c["name"] ? c["name"].as<std::string>() : "?");
          ct.image = c["image"] ? c["image"].as<std::string>() : "";
          ct.argv = c["command"] ? strings_of(c["command"]) : image_entrypoint(ct.image);
          const auto args = strings_of(c["args"]);
          ct.argv.insert(ct.argv.end(), args.begin(), args.end());
          ct.node = static_cast<const YAML::Node&>(c);
          ct.owner = &obj;
          out.push_back(ct);
        }
      }
    }
    const auto compose_path = kDocker / "compose.yaml";
    if (fs::exists(compose_path)) {
      const auto compose = YAML::LoadFile(compose_path.string());
      for (const auto& service : compose["services"]) {
        Container ct;
        ct.where = rel(compose_path) + " service " + service.first.as<std::string>();
        ct.image = service.second["image"] ? service.second["image"].as<std::string>() : "";
        ct.argv = service.second["entrypoint"] ? strings_of(service.second["entrypoint"]) : image_entrypoint(ct.image);
        const auto df = dockerfiles().find(image_name(ct.image));
        const auto command = service.second["command"] ? strings_of(service.second["command"])
                             : df != dockerfiles().end() ? df->second.cmd
                                                         : std::vector<std::string>{};
        ct.argv.insert(ct.argv.end(), command.begin(), command.end());
        ct.node = service.second;
        out.push_back(ct);
      }
    }
    return out;
  }();
  return all;
}

const Object* find_object(const std::string& kind, const std::string& name) {
  for (const auto& obj : k8s_objects()) {
    if (obj.kind == kind && obj.name == name) return &obj;
  }
  return nullptr;
}

bool cmake_declares(const std::string& cache_variable) {
  const std::regex declared("(option|set)\\(\\s*" + cache_variable + "[\\s)]");
  for (const auto& dir : {kSource, kSource / "common", kSource / "analysis", kSource / "loadgen", kSource / "server_stub",
                          kSource / "server_stub" / "gpu"}) {
    const auto path = dir / "CMakeLists.txt";
    if (fs::exists(path) && std::regex_search(read_text(path), declared)) return true;
  }
  return false;
}

bool cmake_has_executable(const std::string& target) {
  const std::regex declared("add_executable\\(\\s*" + target + "[\\s)]");
  for (const auto& dir : {kSource / "loadgen", kSource / "server_stub"}) {
    const auto path = dir / "CMakeLists.txt";
    if (fs::exists(path) && std::regex_search(read_text(path), declared)) return true;
  }
  return false;
}

// --- the tests ----------------------------------------------------------------------------------

TEST(DeployFiles, TheFilesExist) {
  for (const auto& path : {kDocker / "README.md", kDocker / "llmload.Dockerfile", kDocker / "llmload-server.Dockerfile",
                           kDocker / "compose.yaml", kDocker / "k8s" / "llmload-job.yaml",
                           kDocker / "k8s" / "llmload-shards.yaml", kDocker / "k8s" / "llmload-merge.yaml",
                           kDocker / "k8s" / "llmload-server.yaml", kDocker / "k8s" / "results-pvc.yaml",
                           kDocker / "k8s" / "wait-job.sh", kSource / "scripts" / "images.sh",
                           kSource / "docs" / "deploy.md", kSource / ".dockerignore"}) {
    EXPECT_TRUE(fs::is_regular_file(path)) << rel(path) << " is missing";
  }
  for (const auto& script : {kSource / "scripts" / "images.sh", kDocker / "k8s" / "wait-job.sh"}) {
    const auto perms = fs::status(script).permissions();
    EXPECT_NE(perms & fs::perms::owner_exec, fs::perms::none) << rel(script) << " is not executable";
  }
}

TEST(DeployFiles, EveryYamlFileParses) {
  const auto files = files_under(kDocker, ".yaml");
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    // As written (placeholders included) and as submitted (placeholders filled in).
    for (const bool filled : {false, true}) {
      const auto text = filled ? fill_placeholders(read_text(path)) : read_text(path);
      try {
        const auto docs = YAML::LoadAll(text);
        EXPECT_FALSE(docs.empty()) << rel(path) << " holds no document";
        for (const auto& doc : docs) EXPECT_TRUE(doc.IsMap()) << rel(path) << ": a document is not a mapping";
      } catch (const YAML::Exception& e) {
        ADD_FAILURE() << rel(path) << " does not parse" << (filled ? " (placeholders filled in)" : "") << ": " << e.what();
      }
    }
  }
}

TEST(KubernetesManifests, ObjectsHaveTheirRequiredFields) {
  const std::map<std::string, std::string> api_of{{"ConfigMap", "v1"},
                                                  {"Service", "v1"},
                                                  {"PersistentVolumeClaim", "v1"},
                                                  {"Job", "batch/v1"},
                                                  {"Deployment", "apps/v1"}};
  const std::regex dns_label("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  ASSERT_FALSE(k8s_objects().empty());
  std::map<std::string, int> kinds;
  for (const auto& obj : k8s_objects()) {
    SCOPED_TRACE(obj.where());
    ++kinds[obj.kind];
    ASSERT_TRUE(api_of.count(obj.kind)) << "unexpected kind '" << obj.kind << "'";
    ASSERT_TRUE(obj.node["apiVersion"]);
    EXPECT_EQ(obj.node["apiVersion"].as<std::string>(), api_of.at(obj.kind));
    EXPECT_TRUE(std::regex_match(obj.name, dns_label) && obj.name.size() <= 63) << "bad metadata.name '" << obj.name << "'";
    EXPECT_TRUE(obj.node["metadata"]["labels"] && obj.node["metadata"]["labels"]["app.kubernetes.io/name"])
        << "no app.kubernetes.io/name label";
    if (obj.kind == "ConfigMap") {
      EXPECT_TRUE(obj.node["data"] && obj.node["data"].IsMap());
    }
    if (obj.kind == "PersistentVolumeClaim") {
      EXPECT_TRUE(obj.node["spec"]["accessModes"] && obj.node["spec"]["accessModes"].size() > 0);
      EXPECT_TRUE(obj.node["spec"]["resources"]["requests"]["storage"]);
    }
    if (obj.kind == "Job" || obj.kind == "Deployment") {
      const auto spec = obj.node["spec"];
      const auto pod = spec["template"]["spec"];
      ASSERT_TRUE(pod && pod["containers"] && pod["containers"].size() > 0) << "no containers";
      EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"] && pod["securityContext"]["runAsNonRoot"].as<bool>())
          << "pods must run as non-root";
      if (obj.kind == "Job") {
        ASSERT_TRUE(pod["restartPolicy"]) << "a Job's pod needs restartPolicy Never or OnFailure";
        const auto restart = pod["restartPolicy"].as<std::string>();
        EXPECT_TRUE(restart == "Never" || restart == "OnFailure") << restart;
        EXPECT_TRUE(spec["backoffLimit"]) << "state the retries (backoffLimit)";
        if (spec["podFailurePolicy"]) {
          EXPECT_EQ(restart, "Never") << "podFailurePolicy requires restartPolicy Never";
          for (const auto& rule : spec["podFailurePolicy"]["rules"]) {
            if (!rule["onExitCodes"]) continue;
            const auto target = rule["onExitCodes"]["containerName"].as<std::string>();
            bool found = false;
            for (const auto& c : pod["containers"]) found = found || c["name"].as<std::string>() == target;
            EXPECT_TRUE(found) << "podFailurePolicy names container '" << target << "', which the pod lacks";
          }
        }
      }
      if (obj.kind == "Deployment") {
        const auto match = spec["selector"]["matchLabels"];
        ASSERT_TRUE(match && match.IsMap()) << "no spec.selector.matchLabels";
        for (const auto& label : match) {
          const auto key = label.first.as<std::string>();
          const auto have = spec["template"]["metadata"]["labels"][key];
          EXPECT_TRUE(have && have.as<std::string>() == label.second.as<std::string>())
              << "the selector's " << key << " is not a label of the pod template";
        }
      }
      std::set<std::string> volumes;
      if (pod["volumes"]) {
        for (const auto& v : pod["volumes"]) {
          volumes.insert(v["name"].as<std::string>());
          if (v["configMap"]) {
            EXPECT_NE(find_object("ConfigMap", v["configMap"]["name"].as<std::string>()), nullptr)
                << "volume " << v["name"] << " names ConfigMap " << v["configMap"]["name"] << ", not in docker/k8s";
          }
          if (v["persistentVolumeClaim"]) {
            EXPECT_NE(find_object("PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"].as<std::string>()), nullptr)
                << "volume " << v["name"] << " names a claim not in docker/k8s";
          }
        }
      }
      for (const auto& c : pod["containers"]) {
        EXPECT_TRUE(c["name"] && c["image"]) << "a container needs a name and an image";
        EXPECT_TRUE(c["resources"]["limits"]["memory"]) << "container " << c["name"] << ": no memory limit";
        if (c["volumeMounts"]) {
          for (const auto& m : c["volumeMounts"]) {
            EXPECT_TRUE(volumes.count(m["name"].as<std::string>()))
                << "container " << c["name"] << " mounts volume " << m["name"] << ", which the pod lacks";
          }
        }
      }
    }
    if (obj.kind == "Service") {
      const auto selector = obj.node["spec"]["selector"];
      ASSERT_TRUE(selector && selector.IsMap()) << "no spec.selector";
      const Object* backend = nullptr;
      for (const auto& other : k8s_objects()) {
        if (other.kind != "Deployment") continue;
        bool all = true;
        for (const auto& label : selector) {
          const auto have = other.node["spec"]["template"]["metadata"]["labels"][label.first.as<std::string>()];
          all = all && have && have.as<std::string>() == label.second.as<std::string>();
        }
        if (all) backend = &other;
      }
      ASSERT_NE(backend, nullptr) << "the selector matches no Deployment in docker/k8s";
      for (const auto& port : obj.node["spec"]["ports"]) {
        const auto target = port["targetPort"] ? port["targetPort"].as<std::string>() : port["port"].as<std::string>();
        bool found = false;
        for (const auto& c : backend->node["spec"]["template"]["spec"]["containers"]) {
          if (!c["ports"]) continue;
          for (const auto& p : c["ports"]) {
            found = found || (p["name"] && p["name"].as<std::string>() == target) ||
                    p["containerPort"].as<std::string>() == target;
          }
        }
        EXPECT_TRUE(found) << "targetPort " << target << " is no containerPort of " << backend->where();
      }
    }
  }
  // What the issue asks for: a Job, an Indexed Job, the mock server as Deployment + Service.
  EXPECT_GE(kinds["Job"], 2);
  EXPECT_GE(kinds["Deployment"], 1);
  EXPECT_GE(kinds["Service"], 1);
  EXPECT_GE(kinds["PersistentVolumeClaim"], 1) << "the artifacts need a volume that outlives the pods";
}

TEST(KubernetesManifests, VariablesInCommandsAreDefined) {
  const std::regex ref("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");
  for (const auto& ct : containers()) {
    if (ct.owner == nullptr) continue;
    std::set<std::string> env;
    if (ct.node["env"]) {
      for (const auto& e : ct.node["env"]) env.insert(e["name"].as<std::string>());
    }
    const auto mode = ct.owner->node["spec"]["completionMode"];
    // The Job controller sets JOB_COMPLETION_INDEX in every container of an Indexed Job.
    if (ct.owner->kind == "Job" && mode && mode.as<std::string>() == "Indexed") env.insert("JOB_COMPLETION_INDEX");
    for (const auto& token : ct.argv) {
      for (auto it = std::sregex_iterator(token.begin(), token.end(), ref); it != std::sregex_iterator(); ++it) {
        EXPECT_TRUE(env.count((*it)[1].str())) << ct.where << ": $(" << (*it)[1].str() << ") is not set in its env";
      }
    }
  }
}

TEST(DeployImages, EveryImageNamedIsBuiltByADockerfileHere) {
  ASSERT_FALSE(containers().empty());
  for (const auto& ct : containers()) {
    SCOPED_TRACE(ct.where);
    ASSERT_FALSE(ct.image.empty()) << "no image";
    const auto name = image_name(ct.image);
    ASSERT_TRUE(dockerfiles().count(name)) << "image " << ct.image << ": no docker/" << name << ".Dockerfile";
    const auto tag = image_tag(ct.image);
    if (name == "llmload-server") {
      EXPECT_TRUE(tag == "cpu" || tag == "cuda") << "llmload-server images are :cpu or :cuda";
    } else {
      EXPECT_EQ(tag, "latest");
    }
    if (ct.owner == nullptr && ct.node["build"]) {  // compose: built from that Dockerfile
      EXPECT_EQ(ct.node["build"]["dockerfile"].as<std::string>(), "docker/" + name + ".Dockerfile");
      EXPECT_TRUE(fs::exists(kDocker / ct.node["build"]["context"].as<std::string>() / "CMakeLists.txt"))
          << "the build context must be the repository root";
    }
  }
  // scripts/images.sh builds the CPU images under the names the manifests use.
  const auto script = read_text(kSource / "scripts" / "images.sh");
  EXPECT_NE(script.find("build_image docker/llmload.Dockerfile llmload:latest"), std::string::npos);
  EXPECT_NE(script.find("build_image docker/llmload-server.Dockerfile llmload-server:cpu"), std::string::npos);
}

TEST(DeployImages, ContainersRunTheirImagesProgram) {
  for (const auto& ct : containers()) {
    SCOPED_TRACE(ct.where);
    ASSERT_TRUE(dockerfiles().count(image_name(ct.image))) << "image " << ct.image << " has no Dockerfile";
    const auto& df = dockerfiles().at(image_name(ct.image));
    ASSERT_FALSE(df.entrypoint.empty()) << rel(df.path) << " has no ENTRYPOINT";
    ASSERT_FALSE(ct.argv.empty());
    const auto program = basename_of(df.entrypoint.front());
    EXPECT_EQ(basename_of(ct.argv.front()), program) << "runs '" << ct.argv.front() << "', the image's program is " << program;
    EXPECT_TRUE(ct.argv.front() == program || ct.argv.front() == df.entrypoint.front())
        << "'" << ct.argv.front() << "' is neither on PATH by name nor the image's path";
  }
  for (const auto& [name, df] : dockerfiles()) {
    SCOPED_TRACE(rel(df.path));
    ASSERT_FALSE(df.entrypoint.empty());
    const auto program = basename_of(df.entrypoint.front());
    EXPECT_EQ(program, name) << "docker/<name>.Dockerfile builds the image of program <name>";
    EXPECT_TRUE(cmake_has_executable(program)) << "no add_executable(" << program << ") in the repository";
    EXPECT_NE(df.text.find("--target " + program), std::string::npos) << "the build stage does not build " << program;
    bool installed = false;
    for (const auto& ins : df.instructions) {
      const auto dest = ins.rest.substr(ins.rest.find_last_of(" \t") + 1);
      installed = installed || (ins.keyword == "COPY" && dest == df.entrypoint.front());
    }
    EXPECT_TRUE(installed) << "no COPY puts the program at " << df.entrypoint.front();
  }
}

TEST(DeployImages, FlagsExistInTheBuiltPrograms) {
  for (const auto& ct : containers()) check_command_flags(ct.argv, ct.where);
  for (const auto& [name, df] : dockerfiles()) {
    auto argv = df.entrypoint;
    argv.insert(argv.end(), df.cmd.begin(), df.cmd.end());
    if (name == "llmload" && argv.size() == 2 && argv[1] == "--help") continue;  // `llmload --help`
    check_command_flags(argv, rel(df.path) + " ENTRYPOINT + CMD");
  }
}

TEST(DeployImages, ScenarioFilesUseFlagsOfLlmloadRun) {
  const auto& known = help_flags("llmload", "run");
  auto check_keys = [&](const YAML::Node& scenario, const std::string& where) {
    ASSERT_TRUE(scenario.IsMap()) << where << ": a scenario file is a mapping";
    for (const auto& kv : scenario) {
      auto key = kv.first.as<std::string>();
      std::replace(key.begin(), key.end(), '_', '-');
      EXPECT_TRUE(known.count("--" + key)) << where << ": key '" << kv.first.as<std::string>()
                                           << "' is no flag of `llmload run --help`";
    }
  };
  for (const auto& obj : k8s_objects()) {
    if (obj.kind != "ConfigMap") continue;
    for (const auto& kv : obj.node["data"]) {
      const auto key = kv.first.as<std::string>();
      if (key.size() > 5 && key.substr(key.size() - 5) == ".yaml") {
        check_keys(YAML::Load(kv.second.as<std::string>()), obj.where() + " " + key);
      }
    }
  }
  // Where each --scenario-file comes from: a ConfigMap key mounted there, or the scenarios/ that
  // llmload.Dockerfile copies to /usr/share/llmload/scenarios.
  for (const auto& ct : containers()) {
    const auto file = flag_value(ct.argv, "--scenario-file");
    if (file.empty()) continue;
    SCOPED_TRACE(ct.where + " --scenario-file " + file);
    const std::string shipped = "/usr/share/llmload/scenarios/";
    if (file.rfind(shipped, 0) == 0) {
      EXPECT_TRUE(fs::exists(kSource / "scenarios" / file.substr(shipped.size())));
      EXPECT_NE(dockerfiles().at(image_name(ct.image)).text.find("COPY scenarios /usr/share/llmload/scenarios"),
                std::string::npos);
      continue;
    }
    ASSERT_NE(ct.owner, nullptr) << "not a file the image ships";
    bool found = false;
    const auto pod = ct.owner->node["spec"]["template"]["spec"];
    for (const auto& m : ct.node["volumeMounts"]) {
      const auto dir = m["mountPath"].as<std::string>() + "/";
      if (file.rfind(dir, 0) != 0) continue;
      for (const auto& v : pod["volumes"]) {
        if (v["name"].as<std::string>() != m["name"].as<std::string>() || !v["configMap"]) continue;
        const auto* cm = find_object("ConfigMap", v["configMap"]["name"].as<std::string>());
        found = found || (cm != nullptr && cm->node["data"][file.substr(dir.size())]);
      }
    }
    EXPECT_TRUE(found) << "no ConfigMap key is mounted at that path";
  }
}

TEST(KubernetesManifests, ShardsAndMergeAgree) {
  // Named after the run (@RUN_ID@ filled in), so that every run is new Jobs: a Job's pod template
  // cannot change, and the next run's --start-at and directories differ.
  const auto* shards = find_object("Job", fill_placeholders("llmload-shards-@RUN_ID@"));
  const auto* merge = find_object("Job", fill_placeholders("llmload-merge-@RUN_ID@"));
  ASSERT_NE(shards, nullptr) << "docker/k8s has no Job llmload-shards-@RUN_ID@";
  ASSERT_NE(merge, nullptr) << "docker/k8s has no Job llmload-merge-@RUN_ID@";
  const auto spec = shards->node["spec"];
  ASSERT_TRUE(spec["completionMode"]);
  EXPECT_EQ(spec["completionMode"].as<std::string>(), "Indexed");
  const int n = spec["completions"].as<int>();
  EXPECT_GE(n, 2);
  EXPECT_EQ(spec["parallelism"].as<int>(), n) << "every shard must run at once (parallelism = completions)";
  const Container* shard = nullptr;
  const Container* merger = nullptr;
  for (const auto& ct : containers()) {
    if (ct.owner == shards) shard = &ct;
    if (ct.owner == merge) merger = &ct;
  }
  ASSERT_NE(shard, nullptr);
  ASSERT_NE(merger, nullptr);
  ASSERT_GE(shard->argv.size(), 2u);
  EXPECT_EQ(shard->argv[1], "run");
  EXPECT_EQ(flag_value(shard->argv, "--shard-index"), "$(JOB_COMPLETION_INDEX)");
  EXPECT_EQ(flag_value(shard->argv, "--shard-count"), std::to_string(n)) << "--shard-count must equal completions";
  EXPECT_FALSE(flag_value(shard->argv, "--start-at").empty()) << "shards start together: --start-at";
  const auto out = flag_value(shard->argv, "--output");
  const std::string suffix = "$(JOB_COMPLETION_INDEX)";
  ASSERT_TRUE(out.size() > suffix.size() && out.substr(out.size() - suffix.size()) == suffix)
      << "each shard writes its own directory, ending in the index: " << out;
  const auto prefix = out.substr(0, out.size() - suffix.size());

  ASSERT_GE(merger->argv.size(), 2u);
  EXPECT_EQ(merger->argv[1], "merge");
  std::vector<std::string> dirs;
  for (std::size_t i = 2; i < merger->argv.size(); ++i) {
    if (merger->argv[i].rfind("--", 0) == 0) {
      ++i;  // a flag and its value
      continue;
    }
    dirs.push_back(merger->argv[i]);
  }
  std::vector<std::string> expected;
  for (int i = 0; i < n; ++i) expected.push_back(prefix + std::to_string(i));
  EXPECT_EQ(dirs, expected) << "llmload merge must read exactly the shards' directories";
  const auto merged = flag_value(merger->argv, "--output");
  EXPECT_FALSE(merged.empty());
  EXPECT_EQ(std::count(expected.begin(), expected.end(), merged), 0);
  // Both mount the same claim at the same place.
  for (const auto* ct : {shard, merger}) {
    bool mounted = false;
    for (const auto& m : ct->node["volumeMounts"]) mounted = mounted || m["mountPath"].as<std::string>() == "/results";
    EXPECT_TRUE(mounted) << ct->where << " does not mount /results";
  }
}

// llmload keeps a run's finished requests in a temporary file in $TMPDIR, /tmp or /var/tmp
// (common/temp_file.hpp) so that its memory stays flat: a read-only root with nothing writable
// there would keep them in memory, and a long run would meet the pod's memory limit.
TEST(KubernetesManifests, LlmloadWithAReadOnlyRootHasATemporaryDirectoryOnDisk) {
  int checked = 0;
  for (const auto& ct : containers()) {
    if (ct.owner == nullptr || ct.argv.empty() || basename_of(ct.argv[0]) != "llmload") continue;
    const auto sc = ct.node["securityContext"];
    if (!sc || !sc["readOnlyRootFilesystem"] || !sc["readOnlyRootFilesystem"].as<bool>()) continue;
    ++checked;
    SCOPED_TRACE(ct.where);
    std::string dir = "/tmp";
    if (ct.node["env"]) {
      for (const auto& e : ct.node["env"]) {
        if (e["name"].as<std::string>() == "TMPDIR" && e["value"]) dir = e["value"].as<std::string>();
      }
    }
    // The mount that holds `dir`: the longest mount path it is at or under.
    std::string volume;
    std::size_t longest = 0;
    bool writable = false;
    if (ct.node["volumeMounts"]) {
      for (const auto& m : ct.node["volumeMounts"]) {
        const auto path = m["mountPath"].as<std::string>();
        if ((dir == path || dir.rfind(path + "/", 0) == 0) && path.size() > longest) {
          longest = path.size();
          volume = m["name"].as<std::string>();
          writable = !(m["readOnly"] && m["readOnly"].as<bool>());
        }
      }
    }
    ASSERT_FALSE(volume.empty() || !writable) << "no writable volume at " << dir << " (mount an emptyDir at /tmp)";
    const auto pod = ct.owner->node["spec"]["template"]["spec"];
    bool on_disk = false;
    for (const auto& v : pod["volumes"]) {
      if (v["name"].as<std::string>() != volume) continue;
      const bool memory = v["emptyDir"] && v["emptyDir"]["medium"] && v["emptyDir"]["medium"].as<std::string>() == "Memory";
      on_disk = (v["emptyDir"] || v["persistentVolumeClaim"]) && !memory;
    }
    EXPECT_TRUE(on_disk) << "volume " << volume << " at " << dir << " is not on disk (an emptyDir without medium Memory)";
  }
  EXPECT_GE(checked, 3) << "the run Job, the shards and the merge run llmload with a read-only root";
}

TEST(Dockerfiles, AreMultiStageNonRootAndBuildFromTheRepository) {
  ASSERT_EQ(dockerfiles().size(), 2u) << "docker/llmload.Dockerfile and docker/llmload-server.Dockerfile";
  for (const auto& [name, df] : dockerfiles()) {
    SCOPED_TRACE(rel(df.path));
    ASSERT_EQ(df.stage_bases.size(), 2u) << "a build stage and a runtime stage";
    EXPECT_EQ(df.stage_bases[0], "${BUILD_IMAGE}");
    EXPECT_EQ(df.stage_bases[1], "${RUNTIME_IMAGE}");
    EXPECT_EQ(df.arg_defaults.count("BUILD_IMAGE") ? df.arg_defaults.at("BUILD_IMAGE") : "", "debian:bookworm");
    EXPECT_EQ(df.arg_defaults.count("RUNTIME_IMAGE") ? df.arg_defaults.at("RUNTIME_IMAGE") : "", "debian:bookworm-slim");
    EXPECT_FALSE(df.user.empty()) << "no USER: the image would run as root";
    EXPECT_TRUE(df.user.rfind("0", 0) != 0 && df.user.rfind("root", 0) != 0) << "USER " << df.user;
    for (const auto& ins : df.instructions) {
      if (ins.keyword == "COPY" && ins.rest.rfind("--from", 0) != 0) {
        std::istringstream words(ins.rest);
        std::vector<std::string> parts;
        for (std::string w; words >> w;) parts.push_back(w);
        ASSERT_GE(parts.size(), 2u) << "COPY " << ins.rest;
        for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
          EXPECT_TRUE(fs::exists(kSource / parts[i])) << "COPY " << parts[i] << ": no such path in the repository";
        }
      }
      if (ins.keyword == "RUN") {
        const std::regex define("-D([A-Z][A-Z0-9_]+)=");
        for (auto it = std::sregex_iterator(ins.rest.begin(), ins.rest.end(), define); it != std::sregex_iterator(); ++it) {
          const auto var = (*it)[1].str();
          if (var.rfind("CMAKE_", 0) == 0) continue;
          EXPECT_TRUE(cmake_declares(var)) << "-D" << var << " is no option of the project's CMake files";
        }
        if (ins.rest.find("cmake -S") != std::string::npos) {
          EXPECT_NE(ins.rest.find("-DLLMLOAD_BUILD_TESTS=OFF"), std::string::npos);
          EXPECT_NE(ins.rest.find("-DLLMLOAD_BUILD_BENCH=OFF"), std::string::npos);
        }
      }
    }
  }
  EXPECT_NE(dockerfiles().at("llmload").text.find("VOLUME [\"/results\"]"), std::string::npos);
}

TEST(Dockerfiles, TheServerHasACudaVariant) {
  // Not built on the project's machines (no registry to pull nvidia/cuda from): checked here.
  const auto& df = dockerfiles().at("llmload-server");
  ASSERT_TRUE(df.arg_defaults.count("LLMLOAD_ENABLE_CUDA")) << "no ARG LLMLOAD_ENABLE_CUDA";
  EXPECT_EQ(df.arg_defaults.at("LLMLOAD_ENABLE_CUDA"), "OFF") << "the default variant is the CPU one";
  EXPECT_TRUE(cmake_declares("LLMLOAD_ENABLE_CUDA"));
  EXPECT_NE(df.text.find("-DLLMLOAD_ENABLE_CUDA=${LLMLOAD_ENABLE_CUDA}"), std::string::npos);
  // The documented CUDA build: an nvidia/cuda 13 devel image to build, the runtime image of the
  // same version and distribution to run, LLMLOAD_ENABLE_CUDA=ON.
  const std::regex devel("BUILD_IMAGE=nvidia/cuda:(13\\.[0-9.]+)-devel-([a-z0-9.]+)");
  const std::regex runtime("RUNTIME_IMAGE=nvidia/cuda:(13\\.[0-9.]+)-runtime-([a-z0-9.]+)");
  std::smatch d;
  std::smatch r;
  ASSERT_TRUE(std::regex_search(df.text, d, devel)) << "no --build-arg BUILD_IMAGE=nvidia/cuda:13.x-devel-... documented";
  ASSERT_TRUE(std::regex_search(df.text, r, runtime)) << "no --build-arg RUNTIME_IMAGE=nvidia/cuda:13.x-runtime-... documented";
  EXPECT_EQ(d[1].str(), r[1].str()) << "devel and runtime images of different CUDA versions";
  EXPECT_EQ(d[2].str(), r[2].str()) << "devel and runtime images of different distributions";
  EXPECT_NE(df.text.find("LLMLOAD_ENABLE_CUDA=ON"), std::string::npos);
  // The same build arguments in the docs.
  const auto docs = read_text(kSource / "docs" / "deploy.md");
  EXPECT_NE(docs.find(d[0].str()), std::string::npos) << "docs/deploy.md does not show " << d[0].str();
  EXPECT_NE(docs.find(r[0].str()), std::string::npos) << "docs/deploy.md does not show " << r[0].str();
}

}  // namespace
