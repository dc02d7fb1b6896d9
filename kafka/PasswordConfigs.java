/*
 * Prints, one per line and sorted, `<name> <TYPE>` for every config that Kafka's own ConfigDefs declare
 * (broker, topic, client, security and Connect configs alike; a name declared with two types is printed
 * twice), and on stderr `read <class>` for every class whose ConfigDefs it read, so that the generator
 * can refuse a run that silently missed the broker's or the topics' ConfigDef. It finds them
 * by reading every static ConfigDef field and every static no-argument ConfigDef method of the
 * classes in the kafka-* and connect-* jars on its class path (so a config added in a new release is
 * found without a list to keep up to date). Run by kafka/gen_password_configs.py with Java's
 * single-file source launcher:  java -cp '.kafka-cache/<version>/lib/*' kafka/PasswordConfigs.java
 */
import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Enumeration;
import java.util.Map;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

public class PasswordConfigs {
    public static void main(String[] args) throws Exception {
        Class<?> defClass = Class.forName("org.apache.kafka.common.config.ConfigDef");
        TreeSet<String> out = new TreeSet<>();
        ClassLoader loader = PasswordConfigs.class.getClassLoader();
        for (String path : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!path.endsWith(".jar") || !new File(path).getName().matches("(kafka|connect).*")) continue;
            try (JarFile jar = new JarFile(path)) {
                for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                    String n = e.nextElement().getName();
                    if (!n.endsWith(".class") || n.contains("-") || !(n.startsWith("org/apache/kafka/") || n.startsWith("kafka/"))) continue;
                    String cls = n.substring(0, n.length() - 6).replace('/', '.');
                    try {
                        Class<?> c = Class.forName(cls, false, loader);
                        boolean read = false;
                        for (Field f : c.getDeclaredFields()) {
                            if (Modifier.isStatic(f.getModifiers()) && defClass.isAssignableFrom(f.getType())) {
                                f.setAccessible(true);
                                read |= collect(f.get(null), out);
                            }
                        }
                        for (Method m : c.getDeclaredMethods()) {
                            if (Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 0
                                    && defClass.isAssignableFrom(m.getReturnType())) {
                                m.setAccessible(true);
                                read |= collect(m.invoke(null), out);
                            }
                        }
                        if (read) System.err.println("read " + cls);
                    } catch (Throwable t) {
                        // a class that cannot load or initialise here: it holds no ConfigDef we can read
                    }
                }
            }
        }
        for (String s : out) System.out.println(s);
        System.exit(0);
    }

    static boolean collect(Object def, TreeSet<String> out) throws Exception {
        if (def == null) return false;
        Map<?, ?> keys = (Map<?, ?>) def.getClass().getMethod("configKeys").invoke(def);
        for (Object key : keys.values()) {
            Object type = key.getClass().getField("type").get(key);
            out.add(key.getClass().getField("name").get(key) + " " + type);
        }
        return true;
    }
}
