import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** A JVM that replaces itself by another program: after SECONDS it calls libc's execv (the
 * foreign function API, JDK 22+) with PROGRAM and ARGS, so the same process runs the new
 * program (the agent's test starts another JVM this way). Args: SECONDS PROGRAM ARGS... */
public class ExecSelf {
    public static void main(String[] args) throws Throwable {
        Thread.sleep(Long.parseLong(args[0]) * 1000L);
        Linker linker = Linker.nativeLinker();
        MethodHandle execv = linker.downcallHandle(
                linker.defaultLookup().find("execv").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            int n = args.length - 1;
            MemorySegment argv = arena.allocate(ValueLayout.ADDRESS, n + 1);
            for (int i = 0; i < n; i++) {
                argv.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(args[i + 1]));
            }
            argv.setAtIndex(ValueLayout.ADDRESS, n, MemorySegment.NULL);
            int rc = (int) execv.invokeExact(arena.allocateFrom(args[1]), argv);
            System.err.println("execv " + args[1] + " failed: " + rc);
            System.exit(3);
        }
    }
}
