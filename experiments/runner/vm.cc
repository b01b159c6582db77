// experiments/runner/vm.cc: see vm.h.
#include "vm.h"

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "attach.h"
#include "boot_watch.h"
#include "hostlib/error.h"
#include "hostlib/run_dir.h"
#include "pinning.h"
#include "signals.h"
#include "text.h"

namespace fs = std::filesystem;
namespace pt = boost::property_tree;

namespace spinlab::run {

// One clock sample about every 100 ms: a step of the guest's TSC offset is then placed to
// within 100 ms, and sampling costs ~3 ms of one host CPU per 100 ms (clock_sampler.h).
constexpr std::chrono::milliseconds kClockSampleInterval(100);

std::optional<VmInfo> read_vm_json(const std::string& path) {
    std::ifstream f(path);
    if (!f) return std::nullopt;
    try {
        pt::ptree t;
        pt::read_json(f, t);
        VmInfo v;
        v.state = t.get<std::string>("state", "");
        v.accel = t.get<std::string>("accel", "");
        v.backend = t.get<std::string>("backend", "");
        v.qemu_version = t.get<std::string>("qemu_version", "");
        v.qemu_pid = t.get<uint64_t>("qemu_pid", 0);
        if (auto ids = t.get_child_optional("vcpu_thread_ids"))
            for (const auto& [k, id] : *ids) v.vcpu_tids.push_back(id.get_value<uint64_t>());
        if (auto lx = t.get_child_optional("linux"); lx && lx->get_optional<std::string>("kernel_package"))
            v.guest_kernel = lx->get<std::string>("kernel_package") + " " + lx->get<std::string>("kernel_version", "");
        if (auto ids = t.get_child_optional("vcpu_apic_ids")) {
            v.vcpu_apic_ids.emplace();
            for (const auto& [k, id] : *ids) v.vcpu_apic_ids->push_back(id.get_value<uint32_t>());
        }
        return v;
    } catch (const pt::ptree_error&) {
        return std::nullopt;  // being rewritten, or not there yet
    }
}

std::string cpu_mapping_problem(const std::vector<uint32_t>& guest_apic_ids,
                                const std::vector<uint32_t>& qemu_apic_ids) {
    if (guest_apic_ids.size() != qemu_apic_ids.size())
        return "the guest has " + std::to_string(guest_apic_ids.size()) + " CPUs, QEMU " +
               std::to_string(qemu_apic_ids.size()) + " vCPUs";
    for (size_t n = 0; n < guest_apic_ids.size(); ++n)
        if (guest_apic_ids[n] != qemu_apic_ids[n])
            return "guest CPU " + std::to_string(n) + " has APIC id " + std::to_string(guest_apic_ids[n]) +
                   " but QEMU's vCPU " + std::to_string(n) + " has APIC id " + std::to_string(qemu_apic_ids[n]) +
                   ": the guest numbers its CPUs differently from QEMU, so the host's timeline of vCPU " +
                   std::to_string(n) + "'s thread is not CPU " + std::to_string(n) + "'s";
    return "";
}

std::string run_dir() { return spinlab::run_dir(); }

std::vector<std::string> spinlab_vm_argv(const Spec& spec, const std::string& spinlab_vm,
                                         const std::string& vm_name, const std::string& results_dir,
                                         const std::string& console) {
    // `spinlab-vm run` rather than `start`: `start` outlives its caller by design, while
    // `run` is tied to us (PR_SET_PDEATHSIG) and tears the VM down when we die.
    std::vector<std::string> argv{spinlab_vm, "run", vm_name, "--quiet",
                                  "--cpus", std::to_string(spec.vm.cpus),
                                  "--memory", std::to_string(spec.vm.memory_mb),
                                  "--accel", spec.vm.accel,
                                  "--backend", spec.vm.backend,
                                  "--append", kernel_append(spec),
                                  "--save-console", results_dir + "/logs/" + console + ".log"};
    if (spec.vm.guest == "linux") argv.insert(argv.end(), {"--guest", "linux", "--lock", spec.vm.lock});
    if (const std::vector<uint32_t> pin = vm_pin(spec, 0); !pin.empty())
        argv.insert(argv.end(), {"--pin", join_ids(pin)});
    if (!spec.vm.kernel.empty()) argv.insert(argv.end(), {"--kernel", spec.vm.kernel});
    if (!spec.vm.initrd.empty()) argv.insert(argv.end(), {"--initrd", spec.vm.initrd});
    return argv;
}

void prepare_guest(const Spec& spec, const std::string& spinlab_vm, const std::string& results_dir,
                   const std::function<void(const std::string&)>& note) {
    if (spec.vm.guest != "linux" || !spec.vm.attach.empty() || !spec.vm.kernel.empty()) return;
    const std::string log = results_dir + "/logs/prepare.log";
    note("preparing the Linux guest: Debian's kernel and spinlab's initramfs into build/linux/ "
         "(spinlab-vm prepare; minutes the first time, log in logs/prepare.log)");
    Child c({spinlab_vm, "prepare", "--guest", "linux"}, log);
    while (c.running()) {
        if (pending_signal()) {
            c.stop(std::chrono::seconds(2));
            throw std::runtime_error("interrupted by " + signal_name(pending_signal()) + " while preparing the guest");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (const int st = *c.poll(); st != 0)
        throw collect::CollectError(collect::kExitNoVm, "spinlab-vm prepare --guest linux " + Child::describe(st) +
                                                            ": " + last_line(log));
}

void Vm::launch() {
    if (child_ || !spec_.vm.attach.empty()) return;
    child_ = std::make_unique<Child>(spinlab_vm_argv(spec_, spinlab_vm_, name_, results_dir_, log_stem_ + "console"),
                                     results_dir_ + "/logs/" + log_stem_ + "vm.log");
}

void Vm::start(const std::function<void(const std::string&)>& note) {
    using Clock = std::chrono::steady_clock;
    const std::string vm_log = results_dir_ + "/logs/" + log_stem_ + "vm.log";
    if (!spec_.vm.attach.empty()) {
        if (!fs::exists(dir_ + "/vm.json"))
            throw collect::CollectError(collect::kExitNoVm, "vm.attach = " + spec_.vm.attach +
                                                                ": no such VM (" + dir_ +
                                                                "/vm.json does not exist)");
    } else {
        launch();
    }
    // The boot wait runs out once the console has been quiet for vm.boot-timeout (boot_watch.h).
    const auto watch_start = Clock::now();
    BootWatch watch(spec_.vm.boot_timeout_s, spec_.vm.channel_timeout_s, dir_ + "/console.log", watch_start);
    for (;;) {
        if (pending_signal())
            throw std::runtime_error("interrupted by " + signal_name(pending_signal()) +
                                     " while starting the VM");
        if (child_ && !child_->running())
            throw collect::CollectError(collect::kExitNoVm, "spinlab-vm run " +
                                                                Child::describe(*child_->poll()) +
                                                                ": " + last_line(vm_log));
        auto info = read_vm_json(dir_ + "/vm.json");
        if (info && !info->accel.empty()) watch.set_accelerator(info->accel);
        if (info && info->state == "running" && info->vcpu_tids.size() == spec_.vm.cpus) {
            info_ = *info;
            std::error_code ec;
            const std::filesystem::path region = std::filesystem::canonical(dir_ + "/shm", ec);
            if (!ec) info_.region_file = region.string();
            else if (spec_.run.vcpu_state)
                throw std::runtime_error("run.vcpu-state = on, but the VM's region file " + dir_ + "/shm does not "
                                         "resolve (" + ec.message() + ")");
            break;
        }
        if (info && info->state == "running" && !spec_.vm.attach.empty())
            throw collect::CollectError(collect::kExitNoVm,
                                        "vm.attach = " + spec_.vm.attach + " has " +
                                            std::to_string(info->vcpu_tids.size()) +
                                            " vCPUs, the spec says vm.cpus = " +
                                            std::to_string(spec_.vm.cpus));
        if (std::string why = watch.check(Clock::now()); !why.empty())
            throw collect::CollectError(collect::kExitNoVm, "the VM did not start " + why);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    note("VM " + name_ + ": " + std::to_string(spec_.vm.cpus) + " vCPUs (threads " +
         join_ids(info_.vcpu_tids) + "), " + info_.accel + ", " + info_.backend +
         "; waiting for the guest");
    guest_ = std::make_unique<Guest>(name_, run_dir(), spec_.vm.channel_timeout_s);
    guest_->wait_ready([&] { return watch.check(Clock::now()); }, [&] {
        return !pending_signal() && (!child_ || child_->running()) && fs::exists(dir_ + "/vm.json");
    });
    if (pending_signal())
        throw std::runtime_error("interrupted by " + signal_name(pending_signal()) + " while booting");
    // A host that took long to boot the guest answers its requests slowly too.
    const auto ready = Clock::now();
    boot_s_ = std::chrono::duration<double>(ready - watch_start).count();
    channel_timeout_s_ = watch.channel_timeout_s(ready);
    if (channel_timeout_s_ > spec_.vm.channel_timeout_s) {
        guest_->set_channel_timeout(channel_timeout_s_);
        note("the guest took " + std::to_string(long(boot_s_ + 0.5)) + " s to boot: channel requests may take as long (vm.channel-timeout = " +
             std::to_string(long(spec_.vm.channel_timeout_s)) + " s raised to " + std::to_string(long(channel_timeout_s_ + 0.5)) + " s)");
    }
    check_cpu_mapping();
    // Sampled all along: the guest's TSC offset may step during the run (clock_sync.h). The
    // guest's halts are drained from the same moment, out of the same region (halt_log.h).
    if (sample_clock_) {
        clock_sampler_ = std::make_unique<collect::ClockSampler>(guest_->region_path(), kClockSampleInterval,
                                                                 info_.vcpu_tids);
        halt_recorder_ = std::make_unique<collect::HaltRecorder>(guest_->region_path());
    }
}

ClockSampling Vm::clock_sampling() const {
    if (!clock_sampler_) return {};
    return {clock_sampler_->missed(), std::chrono::duration<double, std::milli>(clock_sampler_->spun()).count(),
            clock_sampler_->reference()};
}

void Vm::check_cpu_mapping() {
    if (!info_.vcpu_apic_ids) {
        info_.cpu_mapping = "not checked: spinlab-vm recorded no APIC ids (backend " + info_.backend + ")";
        return;
    }
    // Each CPU stamps its APIC id at its lockstat init, early in its bring-up; the guest is
    // ready before its workload starts, but give a late CPU a moment.
    std::vector<uint32_t> guest;
    for (int attempt = 0; attempt < 50; ++attempt) {
        collect::Snapshot s = guest_->snapshot();
        guest.clear();
        bool all = true;
        for (const collect::CpuSnapshot& c : s.cpus) {
            all = all && c.initialised;
            guest.push_back(c.apic_id);
        }
        if (all) break;
        guest.clear();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (guest.empty()) {
        info_.cpu_mapping = "not checked: a guest CPU had not stamped its APIC id within 5 s";
        return;
    }
    if (std::string problem = cpu_mapping_problem(guest, *info_.vcpu_apic_ids); !problem.empty())
        throw collect::CollectError(collect::kExitFailure, "CPU mapping: " + problem);
    info_.cpu_mapping = "checked: guest CPU n has QEMU vCPU n's APIC id (" + join_ids(*info_.vcpu_apic_ids) + ")";
}

bool Vm::alive() {
    if (child_ && !child_->running()) return false;
    if (!fs::exists(dir_ + "/vm.json")) return false;
    if (guest_) {
        try {
            if (guest_->region_gone()) return false;
        } catch (const std::exception&) {
            return false;
        }
    }
    return true;
}

std::string Vm::why_gone() {
    return child_ && child_->poll() ? "spinlab-vm run " + Child::describe(*child_->poll())
                                    : std::string("its state directory is gone");
}

void Vm::stop() {
    clock_sampler_.reset();
    if (halt_recorder_) halt_recorder_->stop();  // its last drain, while the region is there
    guest_.reset();
    if (!child_) return;
    child_->stop(std::chrono::seconds(20));
    child_.reset();
    // Should `run` have failed to tear down, stop it from outside as well.
    if (fs::exists(dir_)) {
        Child stop({spinlab_vm_, "stop", name_}, results_dir_.empty() ? "" : results_dir_ + "/logs/" + log_stem_ + "vm.log");
        stop.stop(std::chrono::seconds(30));
    }
}

}  // namespace spinlab::run
